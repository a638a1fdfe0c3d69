"""A pids cgroup per sandboxed command, where this process may make one: a hard cap on the
command's processes that holds for root too (the kernel never applies `RLIMIT_NPROC` to uid 0,
and before Linux 5.14 it counted all of a user's processes, not the sandbox's).

Whether a group can be made is probed once per process (make one, move a shell into it, remove
it). Where it cannot — the usual case for a desktop user under cgroup v2, whose own cgroup may
not have children with controllers — `RLIMIT_NPROC` and the supervisor's count are the limit.

bubblewrap joins the group before it starts anything: it is started by
`/bin/sh -c 'echo $$ > GROUP/cgroup.procs && exec bwrap …'`. When the command ends, whatever is
still in the group is killed and the group removed.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_SLACK = 3  # bubblewrap, its init, the supervisor
_counter = itertools.count()


@dataclass(frozen=True, slots=True)
class PidsGroup:
    """One command's group: its directory and the most tasks it may hold."""

    path: Path
    limit: int

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started inside the group (the shell moves itself in, then becomes argv)."""
        join = ('echo $$ > "$0/cgroup.procs" || { echo "loopwright sandbox: cannot join the '
                'process group $0" >&2; exit 125; }; exec "$@"')
        return ["/bin/sh", "-c", join, str(self.path), *argv]

    def create(self) -> None:
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(self.limit))

    def remove(self) -> None:
        """Kill what is left in the group, then remove it (it may take the kernel a moment)."""
        for _ in range(100):
            try:
                pids = (self.path / "cgroup.procs").read_text().split()
            except OSError:
                return
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


def pids_group(processes: int) -> PidsGroup | None:
    """A new group for one command allowed `processes` (plus the sandbox's own), or None."""
    parent = _usable_parent()
    if processes <= 0 or parent is None:
        return None
    name = f"loopwright-{os.getpid()}-{next(_counter)}"
    return PidsGroup(path=parent / name, limit=processes + _SLACK)


def processes_capped_by_kernel() -> bool:
    """Whether the kernel itself caps a command's processes here: a pids cgroup can be made, or
    the user is not root (`RLIMIT_NPROC` applies). Otherwise only the supervisor's count does."""
    return os.geteuid() != 0 or _usable_parent() is not None


@functools.cache
def _usable_parent() -> Path | None:
    for candidate in _candidates():
        probe = PidsGroup(path=candidate / f"loopwright-probe-{os.getpid()}", limit=8)
        try:
            probe.create()
        except OSError:
            continue
        try:
            done = subprocess.run(probe.wrap(["/bin/true"]), capture_output=True, timeout=10,
                                  check=False)
            if done.returncode == 0:
                _remove_orphans(candidate)
                return candidate
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            probe.remove()
    return None


def _remove_orphans(parent: Path) -> None:
    """Groups left by a loopwright process that was killed before it could remove them."""
    for group in parent.glob("loopwright-*-*"):
        owner = group.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            PidsGroup(path=group, limit=0).remove()


def _candidates() -> list[Path]:
    """This process's own pids cgroup directory, in cgroup v1 or v2, if it is writable."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found: list[Path] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if "pids" in controllers.split(","):
            found.append(Path("/sys/fs/cgroup/pids") / relative)
        elif controllers == "":
            for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                directory = base / relative
                with contextlib.suppress(OSError):
                    if "pids" in (directory / "cgroup.subtree_control").read_text().split():
                        found.append(directory)
    return [path for path in found if os.access(path, os.W_OK)]
