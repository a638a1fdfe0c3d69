"""Making a protected path that does not exist yet uncreatable from inside the sandbox.

bubblewrap can only mount over something that exists, and a mount point it creates itself inside
a writable root would be made in the user's workspace and left there. So loopwright makes the
first missing component of such a path itself — an empty directory, or an empty file for a
protected file — just before the command starts, binds it read-only (the kernel also refuses to
rename or remove a mount point), and removes it again when the command ends, if it is still the
empty thing loopwright made. Placeholders are counted per process, so commands running at the
same time share one and the last to end removes it.

A placeholder is never made through a symlink that leaves the root, and never replaces anything:
files are created with `O_EXCL | O_NOFOLLOW`, directories with `mkdir`, both of which fail on
anything already there (that thing is then bound read-only as it is).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

_MAX_LINKS = 8


@dataclass(frozen=True, slots=True)
class Placeholder:
    """An empty directory or file made for the time of one command."""

    path: Path
    directory: bool


_lock = threading.Lock()
_users: dict[Path, int] = {}  # placeholders this process made, and how many commands use each
_kinds: dict[Path, bool] = {}  # and whether each is a directory


def shared(root: Path, path: Path) -> Placeholder | None:
    """A placeholder this process made (for a command still running) on the way from `root` to
    `path`: a command starting now must join it, not take it for the user's own file, or the
    first command's end would remove it from under the second."""
    with _lock:
        current = root
        for part in path.relative_to(root).parts:
            current = current / part
            if current in _users:
                return Placeholder(current, directory=_kinds[current])
    return None


def missing_point(root: Path, path: Path, directory: bool) -> Placeholder | None:
    """The placeholder that keeps `path` (under `root`) from being created: its first missing
    component, followed through symlinks that stay inside `root`; None when `path` exists or
    leads out of `root` (outside the writable roots nothing can be created anyway)."""
    for _ in range(_MAX_LINKS):
        parts = path.relative_to(root).parts
        current = root
        for index, part in enumerate(parts):
            candidate = current / part
            last = index == len(parts) - 1
            if candidate.is_symlink():
                target = candidate.resolve()
                if not (target == root or target.is_relative_to(root)):
                    return None
                path = target.joinpath(*parts[index + 1:])
                break
            if not os.path.lexists(candidate):
                return Placeholder(candidate, directory=directory or not last)
            if not last and not candidate.is_dir():
                return None  # a file where a directory would be: nothing can go below it
            current = candidate
        else:
            return None
    return None


def make(placeholder: Placeholder) -> bool:
    """Create `placeholder` (or join one this process made); False if something else is
    there now (it is bound as it is)."""
    with _lock:
        if placeholder.path in _users:
            _users[placeholder.path] += 1
            return True
        try:
            if placeholder.directory:
                os.mkdir(placeholder.path, 0o755)
            else:
                os.close(os.open(placeholder.path,
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644))
        except FileExistsError:
            return False
        _users[placeholder.path] = 1
        _kinds[placeholder.path] = placeholder.directory
        return True


def remove(placeholder: Placeholder) -> None:
    """Release `placeholder`; the last user removes it if it is still empty."""
    with _lock:
        count = _users.get(placeholder.path, 0) - 1
        if count > 0:
            _users[placeholder.path] = count
            return
        _users.pop(placeholder.path, None)
        _kinds.pop(placeholder.path, None)
        with contextlib.suppress(OSError):
            info = os.lstat(placeholder.path)
            if placeholder.directory and stat.S_ISDIR(info.st_mode):
                os.rmdir(placeholder.path)  # fails, and keeps it, if anything was put inside
            elif stat.S_ISREG(info.st_mode) and info.st_size == 0:
                os.unlink(placeholder.path)
