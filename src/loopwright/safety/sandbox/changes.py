"""What changed within a span of time, by ctime — set to now by every write, link, rename
and change of mode, which no command can set back (`touch -d` and `touch -r` set the mtime):
for the check of what a sandboxed command planted (`planted.py`) in repositories and folders
that were there before it."""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from loopwright.safety.git_hooks import git_dir_of

REPOSITORY_NAMES = frozenset({".git", ".hg", ".jj"})
BARE_HEAD = "HEAD"  # in a folder, with `objects/` and `refs/`: git takes it for a git directory
# A directory or file whose times lie this close to the snapshot may change again within the
# file system's clock tick (a jiffy: 10 ms at worst) without its times moving: it is read again
# anyway (git's "racy" rule). No command writes sooner: bubblewrap and the supervisor start first.
RACY_NS = 10_000_000


@dataclass(frozen=True, slots=True)
class Span:
    """From `start_ns` to `end_ns` (0: still open), a clock tick wider at both ends."""

    start_ns: int
    end_ns: int = 0

    def holds(self, ctime_ns: int) -> bool:
        return ctime_ns >= self.start_ns - RACY_NS and (
            not self.end_ns or ctime_ns <= self.end_ns + RACY_NS)

    def __str__(self) -> str:
        return f"{self.start_ns} {self.end_ns}"


@dataclass(frozen=True, slots=True)
class Window:
    """The spans in which commands ran unchecked (each from its start to its end, 0 while it
    runs): what changed outside them was written by someone else, the user."""

    spans: tuple[Span, ...]

    def holds(self, ctime_ns: int) -> bool:
        return any(span.holds(ctime_ns) for span in self.spans)

    def __str__(self) -> str:
        return "".join(f"{span}\n" for span in self.spans)

    @classmethod
    def parse(cls, text: str, *, open_until: int) -> Window:
        """A window as `str` wrote it; a span still open then (its process ended while the
        command ran: bubblewrap's `--die-with-parent` ended it too) ends at `open_until`."""
        spans = []
        for line in text.splitlines():
            start, end = (int(part) for part in line.split())
            spans.append(Span(start, end or open_until))
        return cls(tuple(spans))


# What in a git directory makes git run something: its configuration (`core.fsmonitor`,
# `core.hooksPath`, a filter's or diff's command), where it takes them from, and its hooks.
# Not `index` or `refs`, which the user's own `git status` rewrites.
RUN_FROM = ("config", "config.worktree", "commondir", "hooks", "hgrc")


def configured_in(git_dir: Path, span: Span | Window) -> bool:
    """Whether what makes git run something in `git_dir` (`RUN_FROM`, and each hook) was
    written, made or renamed in within `span`, by its ctime, which no command sets back."""
    paths = [git_dir / name for name in RUN_FROM]
    with contextlib.suppress(OSError), os.scandir(git_dir / "hooks") as hooks:
        paths += [Path(entry.path) for entry in hooks]  # none: its own ctime is enough
    return any(span.holds(_ctime(path)) for path in paths)


def changed_in(path: Path, span: Span | Window) -> bool:
    """Whether `path`, a protected name or a bare repository that was there, was made, renamed
    in or changed within `span`: a file's own ctime (and where a `.git` file points); a
    folder made or renamed in (its ctime and its parent's); then, in a repository, what makes
    git run something — not its index, which the user's `git status` rewrites — and in
    another folder (`.vscode`), anything."""
    try:
        own = os.lstat(path)
        parent = os.lstat(path.parent)
    except OSError:
        return False
    if not stat.S_ISDIR(own.st_mode):
        if span.holds(own.st_ctime_ns):
            return True
        pointed = git_dir_of(path.parent) if path.name.casefold() == ".git" else None
        return pointed is not None and configured_in(pointed, span)
    if span.holds(own.st_ctime_ns) and span.holds(parent.st_ctime_ns):
        return True
    if path.name.casefold() in REPOSITORY_NAMES or (path / BARE_HEAD).is_file():
        return configured_in(path, span)
    return span.holds(own.st_ctime_ns) or any(
        span.holds(_ctime(Path(folder, name)))
        for folder, folders, files in os.walk(path) for name in (*folders, *files))


def _ctime(path: Path) -> int:
    try:
        return os.lstat(path).st_ctime_ns
    except OSError:  # gone meanwhile
        return 0
