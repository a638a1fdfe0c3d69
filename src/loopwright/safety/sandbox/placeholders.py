"""Making a protected path that does not exist yet uncreatable from inside the sandbox.

bubblewrap can only mount over something that exists, and a mount point it creates itself inside
a writable root would be made in the user's workspace and left there. So loopwright makes the
first missing component of such a path itself — an empty directory — just before the command
starts, binds it read-only (the kernel also refuses to rename or remove a mount point), and
removes it again when the command ends, if it is still empty. Placeholders are counted per
process, so commands running at the same time share one and the last to end removes it.

A placeholder is a directory even where the protected path is a file (`loopwright.toml`): an
empty directory is invisible to git (`git status` inside the sandbox shows no stray files),
loopwright's config loader skips a directory, and nothing can be written at that name.

A placeholder is never made through a symlink that leaves the root, and never replaces anything:
`mkdir` fails on anything already there (that thing is then bound read-only as it is).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

_MAX_LINKS = 8

_lock = threading.Lock()
_users: dict[Path, int] = {}  # placeholders this process made, and how many commands use each


def shared(root: Path, path: Path) -> Path | None:
    """A placeholder this process made (for a command still running) on the way from `root` to
    `path`: a command starting now must join it, not take it for the user's own directory, or
    the first command's end would remove it from under the second."""
    with _lock:
        current = root
        for part in path.relative_to(root).parts:
            current = current / part
            if current in _users:
                return current
    return None


def missing_point(root: Path, path: Path) -> Path | None:
    """The placeholder that keeps `path` (under `root`) from being created: its first missing
    component, followed through symlinks that stay inside `root`; None when `path` exists or
    leads out of `root` (outside the writable roots nothing can be created anyway)."""
    for _ in range(_MAX_LINKS):
        parts = path.relative_to(root).parts
        current = root
        for index, part in enumerate(parts):
            candidate = current / part
            if candidate.is_symlink():
                target = candidate.resolve()
                if not (target == root or target.is_relative_to(root)):
                    return None
                path = target.joinpath(*parts[index + 1:])
                break
            if not os.path.lexists(candidate):
                return candidate
            if index < len(parts) - 1 and not candidate.is_dir():
                return None  # a file where a directory would be: nothing can go below it
            current = candidate
        else:
            return None
    return None


def make(placeholder: Path) -> bool:
    """Create `placeholder` (or join one this process made); False if something else is
    there now (it is bound as it is)."""
    with _lock:
        if placeholder in _users:
            _users[placeholder] += 1
            return True
        try:
            os.mkdir(placeholder, 0o755)
        except FileExistsError:
            return False
        _users[placeholder] = 1
        return True


def remove(placeholder: Path) -> None:
    """Release `placeholder`; the last user removes it if it is still empty."""
    with _lock:
        count = _users.get(placeholder, 0) - 1
        if count > 0:
            _users[placeholder] = count
            return
        _users.pop(placeholder, None)
        with contextlib.suppress(OSError):
            os.rmdir(placeholder)  # fails, and keeps it, if anything was put inside
