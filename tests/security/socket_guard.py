"""A socket guard for the red-team suite: while it is on, every attempt of this process to look up
a name that is not local or to connect anywhere but loopback (or a Unix socket) is recorded and
stopped before it happens.

It sits on Python's audit hooks (`socket.getaddrinfo`, `socket.connect`), which fire for every
socket the interpreter opens, in every thread: asyncio's connections and DNS look-ups in its
executor included. An audit hook cannot be removed, so one hook is installed once and the guard
switches it on and off.
"""

from __future__ import annotations

import contextlib
import ipaddress
import sys
import threading
from collections.abc import Iterator
from typing import Any

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class SocketGuard:
    """What was attempted while the guard was on (`attempts`: "connect HOST:PORT" or
    "resolve NAME")."""

    def __init__(self) -> None:
        self.attempts: list[str] = []


_active: list[SocketGuard] = []
_lock = threading.Lock()
_installed = False


class NetworkBlocked(OSError):
    """Raised into the code that tried to leave the machine."""


def _is_local(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    text = str(host).strip("[]").split("%", 1)[0].lower()
    if text in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _active or event not in ("socket.connect", "socket.getaddrinfo"):
        return
    if event == "socket.getaddrinfo":
        host = args[0]
        if _is_local(host):
            return
        attempt = f"resolve {host}"
    else:
        address = args[1]
        if not isinstance(address, tuple):  # a Unix socket
            return
        if _is_local(address[0]):
            return
        attempt = f"connect {address[0]}:{address[1]}"
    with _lock:
        for guard in _active:
            guard.attempts.append(attempt)
    raise NetworkBlocked(f"socket guard: {attempt} blocked")


@contextlib.contextmanager
def socket_guard() -> Iterator[SocketGuard]:
    """Record and block every non-loopback connection (and non-local name look-up) inside."""
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
    guard = SocketGuard()
    _active.append(guard)
    try:
        yield guard
    finally:
        _active.remove(guard)
