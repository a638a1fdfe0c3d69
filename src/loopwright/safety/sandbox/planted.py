"""What a sandboxed command planted below the top of a root, undone when it has ended.

bubblewrap mounts by path, not by name pattern, so three kinds of file a command can write
anywhere in the tree would run later outside the sandbox:

- a compiled module (`.pyc`): Python trusts the source's mtime and size recorded in it, so one
  written beside an unchanged source runs at the next import, and `git status` ignores it;
- a repository (`vendor/x/.git`, a directory or a `gitdir:` file): VS Code's git extension runs
  git in the repositories it finds below the folder it opens, and git runs the `core.fsmonitor`
  (and more) of their config;
- a protected name below the top (`pkg/.claude/settings.json`, `pkg/.vscode/tasks.json`,
  `pkg/.mcp.json`): another agent or an editor started in `pkg/` obeys it.

Before the command, a `Tree` of each writable root is taken: each directory's mtime, ctime and
entries (name, inode), and each `.pyc`'s inode and ctime. It is kept per root and the next one
is built from it, reading again only the directories whose times changed (creating, removing
or renaming an entry changes its directory's times), so a command costs one `lstat` per
directory and per `.pyc`, not a walk of every file. Protected paths that already exist below
the top are bound read-only like those at the top (`mounts.py`), and not descended into;
nor are dependency folders and virtual environments (`SKIPPED_DIRS`: their code is the
project's dependencies, writable by commands as a whole, and invisible to git anyway) beyond
their own top, where a `.venv/.git` is a repository VS Code finds one folder down.

After the command (nothing of it runs any more), the tree is taken again and compared:
every `.pyc` it created or rewrote is removed — a planted one cannot be told from one Python
wrote, and Python writes it again from the source — and every protected name it made below
the top (`.git` included) is moved aside as `NAME.made-by-command`, for the user to look at.
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from loopwright.safety.git_hooks import common_dir, git_dir_of
from loopwright.safety.protected import PROTECTED_ENTRIES, protected_entry_at
from loopwright.safety.sandbox.links import aside_path

MADE_SUFFIX = ".made-by-command"
SKIPPED_DIRS = frozenset({"node_modules", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache"})
"""Dependency and cache folders, not descended into (the project's dependencies, not its own
files: a command may write them whole, and git ignores them already)."""
# The first walk of a root slower than this (a network mount, millions of folders): the root is
# not checked in this process. Later walks have no bound: they read only what changed, so a
# command that makes a million folders pays for their walk, and cannot make the check give up.
FIRST_WALK_SECONDS = 10.0
# A directory or file whose times lie this close to the snapshot may change again within the
# file system's clock tick (a jiffy: 10 ms at worst) without its times moving: it is read again
# anyway (git's "racy" rule). No command writes sooner: bubblewrap and the supervisor start first.
_RACY_NS = 10_000_000


@dataclass(frozen=True, slots=True)
class Listing:
    """One directory: its inode and times, its entries (name -> inode) and, sorted once when it
    is read, the subdirectories to descend into (paths: joined once), its `.pyc` files and the
    protected names in it."""

    inode: int
    mtime_ns: int
    ctime_ns: int
    entries: dict[str, int]
    descend: tuple[str, ...] = ()
    shallow: tuple[str, ...] = ()  # dependency folders: only what lies at their own top
    protected: tuple[str, ...] = ()
    compiled: tuple[str, ...] = ()


@dataclass(kw_only=True)
class Tree:
    """A writable root as seen before or after a command."""

    root: Path
    taken_ns: int
    directories: dict[str, Listing] = field(default_factory=dict)
    # the .pyc files written since the tree taken before the command: only in the one after it
    compiled: list[str] = field(default_factory=list)
    nested: list[Path] = field(default_factory=list)  # protected paths below the top
    # where their `.git` files point (`gitdir: ../../.gitdirs/x`): read-only too, not moved
    pointed: list[Path] = field(default_factory=list)
    overflow: str = ""  # why the tree could not be taken: nothing is checked


_latest: dict[Path, Tree] = {}
_lock = threading.Lock()
_reported: set[Path] = set()  # roots whose overflow was said once
# the last name of each protected entry, folded: an entry named otherwise is none of them
_LAST_NAMES = frozenset(PurePath(entry.relative).parts[-1].casefold()
                        for entry in PROTECTED_ENTRIES)


def take(root: Path, *, since: Tree | None = None) -> Tree:
    """The tree of `root` now, built from the last one taken (blocking: a worker thread), with
    the `.pyc` files written since the tree `since` (taken before the command)."""
    with _lock:
        previous = _latest.get(root)
    if previous is not None and previous.overflow:
        return previous  # given up for this process: another try would cost as much
    tree = _walk(root, previous, since=since)
    with _lock:
        _latest[root] = tree
    return tree


def undo(before: Tree) -> list[str]:
    """Remove the `.pyc` files and move aside the protected names below the top that appeared
    or changed since `before`; one line for each thing done, for the command's result."""
    if before.overflow:
        with _lock:
            said = before.root in _reported
            _reported.add(before.root)
        if said:
            return []
        return [f"loopwright did not check what the commands plant in {before.root} "
                f"({before.overflow}): look for new .pyc files and .git folders yourself"]
    after = take(before.root, since=before)  # never gives up: `before` was taken
    notes = _move_aside(before, after)
    removed, failed = _remove_compiled(before, after)
    notes += failed
    if removed:
        shown = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3
                                          else "")
        notes.append(f"loopwright removed {len(removed)} compiled Python file(s) the command "
                     f"wrote ({shown}): Python writes them again from the sources")
    return notes


def _walk(root: Path, previous: Tree | None, *, since: Tree | None) -> Tree:
    """Each directory is `lstat`ed; one whose inode and times are those of the last tree's
    listing, changed longer ago than the clock's tick before that tree was taken, is not read
    again: making, removing or renaming an entry sets its directory's ctime, which no command
    can set back (`touch -d` sets the mtime, and the ctime to now). A file's content is not
    covered by that: a `.pyc` rewritten in place is found by its own ctime (`since`)."""
    tree = Tree(root=root, taken_ns=time.time_ns())
    old = previous.directories if previous is not None else {}
    racy_after = (previous.taken_ns if previous is not None else 0) - _RACY_NS
    deadline = time.monotonic() + FIRST_WALK_SECONDS if previous is None else None
    directories = tree.directories
    pending = [(str(root), False)]
    while pending:
        directory, shallow = pending.pop()
        if deadline is not None and time.monotonic() > deadline:
            tree.overflow = f"its folders took over {FIRST_WALK_SECONDS:g} s to walk"
            return tree
        try:
            info = os.lstat(directory)
        except OSError:
            continue
        known = old.get(directory)
        if known is None or known.ctime_ns >= racy_after or known.inode != info.st_ino or \
                known.ctime_ns != info.st_ctime_ns or known.mtime_ns != info.st_mtime_ns:
            if not stat.S_ISDIR(info.st_mode):
                continue
            known = _listing(root, directory, info, shallow=shallow)
            if known is None:
                continue
        directories[directory] = known
        pending.extend([(path, False) for path in known.descend])
        pending.extend([(path, True) for path in known.shallow])
        for name in known.protected:
            tree.nested.append(Path(directory, name))
            if name.casefold() == ".git":
                tree.pointed.extend(_pointed_at(Path(directory)))
        if since is not None and known.compiled:
            tree.compiled += _written_since(since, directory, known.compiled)
    return tree


def _written_since(before: Tree, directory: str, names: tuple[str, ...]) -> list[str]:
    """The `.pyc` files of `directory` the command made, linked, renamed in or rewrote: the
    folder did not list them before, or their ctime — set to now by every write, link and
    rename, never settable back — is not older than `before` by a clock tick. So the tree
    before a command needs no `lstat` of each `.pyc`, only its folder's entries."""
    listing = before.directories.get(directory)
    known = listing.entries if listing is not None else {}
    racy_after = before.taken_ns - _RACY_NS
    written: list[str] = []
    for name in names:
        path = f"{directory}/{name}"
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if known.get(name) != info.st_ino or info.st_ctime_ns >= racy_after:
            written.append(path)
    return written


def _listing(root: Path, directory: str, info: os.stat_result, *, shallow: bool = False
             ) -> Listing | None:
    """The directory read again; of a `shallow` one (a dependency folder) only the protected
    names count."""
    entries: dict[str, int] = {}
    descend: list[str] = []
    skipped: list[str] = []
    protected: list[str] = []
    compiled: list[str] = []
    try:
        with _scandir(directory) as listed:
            for entry in listed:
                entries[entry.name] = entry.inode()
                if entry.name.casefold() in _LAST_NAMES:
                    relative = (*Path(directory).relative_to(root).parts, entry.name)
                    name = protected_entry_at(relative)
                    if name is not None:  # at the top: mounted read-only already; not descended
                        if len(relative) > len(PurePath(name).parts):
                            protected.append(entry.name)
                        continue
                if shallow:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    (skipped if entry.name in SKIPPED_DIRS else descend).append(entry.path)
                # a `__pycache__` link leads Python to a cache where no one looks
                elif entry.name.endswith(".pyc") or (entry.name == "__pycache__" and
                                                     entry.is_symlink()):
                    compiled.append(entry.name)
    except OSError:
        return None
    return Listing(inode=info.st_ino, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns,
                   entries=entries, descend=tuple(descend), shallow=tuple(skipped),
                   protected=tuple(protected), compiled=tuple(compiled))


def _move_aside(before: Tree, after: Tree) -> list[str]:
    known = set(before.nested)
    notes: list[str] = []
    for path in after.nested:
        if path in known or not _new_entry(before, path):
            continue
        aside = aside_path(path, MADE_SUFFIX)
        try:
            _writably(path.parent, functools.partial(os.rename, path, aside))
        except OSError as exc:
            notes.append(f"the command made {path}, which is run or obeyed outside the sandbox, "
                         f"and moving it aside failed ({exc}): delete it before you open "
                         "that folder in an editor or agent, or run git there")
            continue
        what = "a repository" if path.name.casefold() == ".git" else path.name
        notes.append(f"loopwright moved {what} the command made below the top, {path}, to "
                     f"{aside.name}: programs started there would run or obey it outside the "
                     "sandbox")
    return notes


def _new_entry(before: Tree, path: Path) -> bool:
    """Whether `path` was not there before (or is another file now)."""
    listing = before.directories.get(str(path.parent))
    if listing is None:
        return True
    try:
        return listing.entries.get(path.name) != os.lstat(path).st_ino
    except OSError:
        return False


def _remove_compiled(before: Tree, after: Tree) -> tuple[list[str], list[str]]:
    removed: list[str] = []
    failed: list[str] = []
    for path in after.compiled:
        try:
            _writably(Path(path).parent, functools.partial(os.unlink, path))
        except FileNotFoundError:
            pass
        except OSError as exc:
            failed.append(f"the command wrote {path}, which Python would run at the next "
                          f"import, and removing it failed ({exc}): delete it yourself")
            continue
        removed.append(os.path.relpath(path, before.root))
    return removed, failed


def _scandir(directory: str) -> ContextManager[Iterator[os.DirEntry[str]]]:
    """`os.scandir`, giving the owner read access first if it lacks it: a folder made
    `chmod 111` cannot be listed, yet Python opens a `.pyc` in it by name."""
    try:
        return os.scandir(directory)
    except PermissionError:
        mode = stat.S_IMODE(os.lstat(directory).st_mode)
        os.chmod(directory, mode | stat.S_IRUSR | stat.S_IXUSR)
        return os.scandir(directory)


def _writably(parent: Path, change: Callable[[], None]) -> None:
    """`change` an entry of `parent`, giving the owner write access to it first if the command
    took it away (`chmod 555 pkg` would otherwise keep what it planted there)."""
    try:
        change()
    except PermissionError:
        mode = stat.S_IMODE(os.lstat(parent).st_mode)
        os.chmod(parent, mode | stat.S_IWUSR | stat.S_IXUSR)
        change()


def _pointed_at(top: Path) -> list[Path]:
    git_dir = git_dir_of(top)
    if git_dir is None or git_dir == top / ".git":
        return []
    return list(dict.fromkeys((git_dir, common_dir(git_dir))))

