"""Symlinks on the way to a protected path, put back after a command that replaced them.

A mount cannot be put on a symlink (the kernel follows it), so where a protected path is a link
or has one on its way (`.git -> /elsewhere/x.git`, `.claude -> config/claude`), the sandbox
protects where the link leads but not the link itself: `rm .git && git init` would leave a git
directory of the command's making, with its hooks, for the user's next commit. Each such link is
noted when the command is prepared; when the command has ended (nothing of it runs any more),
a link found changed is put back, and what the command left at its place is moved aside under a
name that says so, not deleted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MOVED_SUFFIX = ".replaced-by-command"


@dataclass(frozen=True)
class GuardedLink:
    """A symlink at `path` pointing at `target` (as written) before the command."""

    path: Path
    target: str


def links_on_the_way(root: Path, location: Path) -> GuardedLink | None:
    """The first symlink among the components of `location` below `root`, if one exists now
    (what lies beyond it is protected where it leads)."""
    current = root
    for part in location.relative_to(root).parts:
        current = current / part
        try:
            if current.is_symlink():
                return GuardedLink(path=current, target=os.readlink(current))
            if not current.is_dir():
                return None  # missing, or a file: nothing further down exists
        except OSError:
            return None
    return None


def restore(links: tuple[GuardedLink, ...]) -> list[str]:
    """Put back every link of `links` that is gone or points elsewhere now; a line for each,
    saying where what took its place went. Blocking: call it in a worker thread."""
    notes: list[str] = []
    for link in links:
        try:
            if link.path.is_symlink() and os.readlink(link.path) == link.target:
                continue
        except OSError:
            continue
        aside = aside_path(link.path, MOVED_SUFFIX)
        try:
            if os.path.lexists(link.path):
                os.rename(link.path, aside)
            os.symlink(link.target, link.path)
        except OSError as exc:
            notes.append(f"{link.path} was a symlink to {link.target} that the command replaced; "
                         f"putting it back failed ({exc}): check it before you use git there")
            continue
        moved = f" (what the command made there was moved to {aside.name})" if \
            os.path.lexists(aside) else ""
        notes.append(f"loopwright put back the symlink {link.path} -> {link.target}, which the "
                     f"command replaced{moved}")
    return notes


def aside_path(path: Path, suffix: str) -> Path:
    """A free name beside `path` for what a command left there: `NAME{suffix}`, else
    `NAME{suffix}-2`, `-3`, … (the links a command replaced; what it planted, planted.py)."""
    candidate = path.with_name(path.name + suffix)
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = path.with_name(f"{path.name}{suffix}-{number}")
    return candidate
