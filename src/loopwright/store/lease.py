"""Run leases on sessions: who may write to a session, and when a holder counts as gone.

A lease is a row (owner token, pid, host, expiry) on the session. It is live while it has not
expired and, on this host, while its process is alive: a run killed with SIGKILL frees its session
at once, and a reused pid frees it at the latest when the lease expires (the run holding it renews
it every `RENEW_SECONDS`).
"""

from __future__ import annotations

import os
import socket
import sys
import time

LEASE_SECONDS = 60.0
RENEW_SECONDS = 15.0
HOST = socket.gethostname()


def new_owner() -> str:
    """A token naming one run as a lease holder (unique across processes and hosts): 48 random
    bits, as `uuid4().hex[:12]` gave, without building a UUID (once a run)."""
    return f"{HOST}:{os.getpid()}:{os.urandom(6).hex()}"


def lease_is_live(pid: int | None, host: str | None, expires: float | None) -> bool:
    """Whether a recorded lease still excludes other runs."""
    if expires is None or expires <= time.time():
        return False
    if host != HOST or pid is None:
        return True  # another machine's process: only the expiry can tell
    return pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate it; rely on the expiry
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # the state letter follows the parenthesised command name, which may contain spaces
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
