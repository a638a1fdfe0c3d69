"""The first process inside the sandbox: it sets the resource limits and watches the command.

Run by bubblewrap as `python -I -S -c <this file> LIMITS… ROOTS… -- command…` (standard library
only: it must start without loopwright or site-packages, from wherever the interpreter is). It
forks; the child lowers its soft and hard limits (`RLIMIT_NPROC`, `RLIMIT_FSIZE`, `RLIMIT_AS`;
nothing inside can raise a hard limit again) and becomes the command. The parent waits for it and,
every `_POLL` seconds, counts the processes of the sandbox's PID namespace and the free space on
the writable roots' disks: when the command has as many processes as it may (a fork bomb keeps
itself there forever, and a root user is not held by `RLIMIT_NPROC` at all), or a disk is nearly
full (many files, each under the size limit), it kills every process of the namespace and reports.
A command killed for writing past the file-size limit is reported too, and so is a failed command
that left the private /tmp full. A report is one line on stderr starting with `REPORT_PREFIX`, and
the exit status is then `LIMIT_STATUS`.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time

REPORT_PREFIX = "loopwright sandbox: "
LIMIT_STATUS = 125
_POLL = 0.05
_SELF_AND_INIT = 2  # bubblewrap's init (pid 1) and this process


LIMIT_NAMES = ("processes", "file_size", "address_space", "tmp_size", "min_free")
"""The order of the limits on the command line (whole numbers; 0: none); the writable roots
follow, then `--` and the command."""


def main(argv: list[str]) -> int:
    limits = dict(zip(LIMIT_NAMES, (int(value) for value in argv[1:6]), strict=True))
    split = argv.index("--")
    floors = _free_floors(argv[6:split], limits["min_free"])
    command = argv[split + 1:]
    # SIGCHLD stays blocked and is waited for, so the command's end is seen at once
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        _become(command, limits)
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return _outcome(status, limits)
        stop = _over_a_limit(limits["processes"], floors)
        if stop:
            _kill_all()
            return _report(f"{stop} and every process of the sandbox was killed")
        signal.sigtimedwait({signal.SIGCHLD}, _POLL)


def _over_a_limit(processes: int, floors: dict[str, int]) -> str:
    """Why the command must stop now ("" while it may go on)."""
    if processes and _count_processes() - _SELF_AND_INIT >= processes:
        return f"the command reached the process limit ({processes}, setting " \
               "sandbox_max_processes)"
    for root, floor in floors.items():
        if 0 <= _free_bytes(root) < floor:
            return (f"the disk holding {root} was nearly full (less than {floor >> 20} MiB "
                    "free; setting sandbox_min_free_mb)")
    return ""


def _free_floors(roots: list[str], min_free: int) -> dict[str, int]:
    """For each writable root, the free space below which the command is stopped: `min_free`,
    or half of what is free now if that is less already (a command on a nearly full disk may
    still write, but not take the rest)."""
    floors: dict[str, int] = {}
    if min_free <= 0:
        return floors
    for root in roots:
        free = _free_bytes(root)
        if free >= 0:
            floors[root] = min_free if free > min_free else free // 2
    return floors


def _free_bytes(path: str) -> int:
    try:
        info = os.statvfs(path)
    except OSError:
        return -1
    return info.f_bavail * info.f_frsize


def _become(command: list[str], limits: dict[str, int]) -> None:
    """In the child: lower the limits, then run the command (never returns)."""
    # Python ignores SIGPIPE and SIGXFSZ, and ignored signals survive exec: give the command the
    # defaults (a pipe reader gone ends a writer; a file over the limit ends its writer)
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    try:
        for name, value, slack in (("processes", resource.RLIMIT_NPROC, _SELF_AND_INIT),
                                   ("file_size", resource.RLIMIT_FSIZE, 0),
                                   ("address_space", resource.RLIMIT_AS, 0)):
            amount = limits[name]
            if amount > 0:
                resource.setrlimit(value, (amount + slack, amount + slack))
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{REPORT_PREFIX}cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
    os._exit(127)


def _outcome(status: int, limits: dict[str, int]) -> int:
    code = os.waitstatus_to_exitcode(status)
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ) and limits["file_size"]:
        megabytes = limits["file_size"] // (1024 * 1024)
        return _report(f"a file reached the size limit ({megabytes} MiB, setting "
                       "sandbox_max_file_mb) and the command was stopped")
    if code != 0 and limits["tmp_size"] and _full("/tmp"):
        megabytes = limits["tmp_size"] // (1024 * 1024)
        return _report(f"the private /tmp is full ({megabytes} MiB, setting sandbox_tmp_mb)")
    return code if code >= 0 else 128 - code


def _full(path: str) -> bool:
    """Whether the filesystem at `path` has no room left (less than 1% or 64 KiB)."""
    try:
        info = os.statvfs(path)
    except OSError:
        return False
    free = info.f_bavail * info.f_frsize
    return free < max(64 * 1024, info.f_blocks * info.f_frsize // 100)


def _count_processes() -> int:
    try:
        return sum(1 for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return 0


def _kill_all() -> None:
    """SIGKILL to every other process of the namespace (its own /proc lists only those), until
    none is left: a fork bomb may start new ones while the first are killed."""
    own = os.getpid()
    for _ in range(50):
        others = [int(name) for name in _proc_entries() if int(name) not in (1, own)]
        if not others:
            return
        if own == 2:  # the first process of a fresh PID namespace: -1 means only that namespace
            os.kill(-1, signal.SIGKILL)
        for pid in others:
            _kill(pid)
        _reap()
        time.sleep(0.01)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # gone already (contextlib would cost the start-up time)
        return


def _proc_entries() -> list[str]:
    try:
        return [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _report(text: str) -> int:
    print(f"\n{REPORT_PREFIX}{text}", file=sys.stderr, flush=True)
    return LIMIT_STATUS


if __name__ == "__main__":
    sys.exit(main(sys.argv))
