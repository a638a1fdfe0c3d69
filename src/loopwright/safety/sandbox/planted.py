"""What a sandboxed command planted below the top of a root, undone when it has ended.

bubblewrap mounts by path, not by name pattern, so four kinds of thing a command can write
anywhere in the tree would run later outside the sandbox:

- a compiled module (`.pyc`): Python trusts the source's mtime and size recorded in it, so one
  written beside an unchanged source runs at the next import, and `git status` ignores it;
- a repository (`vendor/x/.git`, a directory or a `gitdir:` file): VS Code's git extension runs
  git in the repositories it finds below the folder it opens, and in the one of a file you
  open (`node_modules/dep/lib/.git` too), and git runs the `core.fsmonitor` of their config;
- a bare repository (a folder holding `HEAD`, `objects/` and `refs/`, or `HEAD` and
  `commondir`): git takes the folder itself for its git directory when you work in it;
- a protected name below the top (`pkg/.claude/settings.json`, `pkg/.vscode/tasks.json`,
  `pkg/.mcp.json`): another agent or an editor started in `pkg/` obeys it; and a VS Code
  workspace file (`*.code-workspace`, a name pattern) at any depth, the top's too.

A fifth is only named in the command's result, not undone: what a Python environment runs at
its every start (a `.pth`, `sitecustomize.py`, its `pyvenv.cfg`; `STARTUP`), which an install
writes too.

Before the command, a `Tree` of each writable root is taken: each directory's inode, times and
entries (name, inode). It is kept per root and the next one is built from it, reading again
only the directories whose inode or times changed: making, removing or renaming an entry sets
its directory's ctime, which no command can set back. So a snapshot costs one `lstat` per
directory. A file's content is another matter: a `.pyc` rewritten in place changes no
directory, so the snapshot after the command `lstat`s each `.pyc` too, and its ctime tells.
Protected paths and bare repositories that already exist below the top are bound read-only
like those at the top (`mounts.py`), and not descended into. In dependency folders and virtual
environments (`DEPENDENCY_DIRS`) only repositories and `.pyc` files are looked for below their
own top; repositories already there are not bound (a mount point would keep
`rm -rf node_modules` from working), so what makes git run something in them is looked at
after the command instead (`changes.configured_in`).

After the command (nothing of it runs any more), the tree is taken again and compared:
every `.pyc` it created or rewrote is removed — a planted one cannot be told from one Python
wrote, and Python writes it again from the source — every protected name it made below the
top (`.git` included) is moved aside as `NAME.made-by-command`, for the user to look at, and
so is the `HEAD` of a bare repository it made, which git then no longer takes for one, and a
repository in a dependency folder whose configuration or hooks it changed.

A root whose first walk gives up (`FIRST_WALK_SECONDS`) leaves the commands meanwhile
unchecked; when the walk, gone on in the background, ends, and again as each of them ends,
anything written, made or changed while one of them ran (by ctime) is taken for theirs and
undone the same way (`Tree.window`); a process that ends first leaves their spans in
loopwright's cache for the next one (`unchecked_runs.py`).
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from loopwright.safety.git_hooks import common_dir, git_dir_of
from loopwright.safety.protected import (
    PROTECTED_ENTRIES,
    WORKSPACE_FILE_SUFFIX,
    protected_entry_at,
)
from loopwright.safety.sandbox import unchecked_runs
from loopwright.safety.sandbox.changes import (
    BARE_HEAD,
    RACY_NS,
    REPOSITORY_NAMES,
    Span,
    Window,
    changed_in,
    configured_in,
)
from loopwright.safety.sandbox.links import aside_path

MADE_SUFFIX = ".made-by-command"
DEPENDENCY_DIRS = frozenset({"node_modules", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                             ".pytest_cache", ".ruff_cache"})
"""Dependency and cache folders: below their own top only repositories and `.pyc` files are
looked for (the project's dependencies, not its own files: their `.vscode` is no editor's; but
git, which an editor runs in the repository of a file you open there, `node_modules/dep/.git`,
runs what its config says, and a venv's Python runs a `.pyc` no one sees)."""
# What makes a folder a repository of its own without a `.git` (a bare one: git takes a folder
# holding these and `BARE_HEAD` for its git directory when you work in it, and runs what its
# `config` says)
BARE_WITH = (frozenset({"objects", "refs"}), frozenset({"commondir"}))
# The first walk of a root slower than this (a network mount, millions of folders): the command
# waits no longer and is not checked (`unchecked` says so once), what the walk found so far is
# bound read-only, and the walk goes on in the background; the commands after it has ended are
# checked. Later walks have no bound: they read only what changed, so a command that makes a
# million folders pays for their walk, and cannot make the check give up.
FIRST_WALK_SECONDS = 10.0
STARTUP = (".pth", "sitecustomize.py", "usercustomize.py")
"""Files of a `site-packages` a Python environment runs at every start (and its `pyvenv.cfg`,
which names the interpreter and library it starts from): VS Code's Python extension starts a
workspace's venv when the folder opens. `pip install` writes `.pth` files too (editable installs,
setuptools), so one a command wrote is reported, not undone."""


@dataclass(frozen=True, slots=True)
class Listing:
    """One directory: its inode and times, its entries (name -> inode) and, sorted once when it
    is read, the subdirectories to walk (paths joined once, with how), its `.pyc` files and the
    protected names in it."""

    inode: int
    mtime_ns: int
    ctime_ns: int
    entries: dict[str, int]
    children: tuple[tuple[str, int], ...] = ()  # (path, where in the tree: `_OWN`, …)
    protected: tuple[str, ...] = ()
    compiled: tuple[str, ...] = ()
    startup: tuple[str, ...] = ()  # what Python runs at an environment's start (`STARTUP`)
    bare: bool = False  # shaped like a git directory (`BARE_HEAD` and `BARE_WITH`)


@dataclass(kw_only=True)
class Tree:
    """A writable root as seen before or after a command."""

    root: Path
    taken_ns: int
    directories: dict[str, Listing] = field(default_factory=dict)
    # the .pyc files written since the tree taken before the command: only in the one after it
    compiled: list[str] = field(default_factory=list)
    startup: list[str] = field(default_factory=list)  # and the `STARTUP` files, the same way
    nested: list[Path] = field(default_factory=list)  # protected paths below the top
    # where their `.git` files point (`gitdir: ../../.gitdirs/x`): read-only too, not moved
    pointed: list[Path] = field(default_factory=list)
    # folders shaped like a git directory below the top, outside dependency folders: read-only
    held: list[Path] = field(default_factory=list)
    # repositories inside dependency folders: not bound (a mount point there would keep
    # `rm -rf node_modules` and `npm ci` from working), moved aside when a command made them
    loose: list[Path] = field(default_factory=list)
    bare: list[Path] = field(default_factory=list)  # every folder shaped like a git directory
    overflow: str = ""  # why the tree could not be taken whole: nothing is checked
    # on the tree a check compares with, while the commands that ran before the root's first
    # walk ended (unchecked) are not all checked: the spans they ran in (`unchecked_runs.py`);
    # whatever was written, made or changed within them is taken for theirs (by ctime, which
    # no command sets back), not for the user's
    window: Window | None = None


_OWN, _DEPENDENCY_TOP, _INSIDE_DEPENDENCY = range(3)  # where in the tree a folder lies
_latest: dict[Path, Tree] = {}
_lock = threading.Lock()
_reported: set[Path] = set()  # roots whose overflow was said once
_pending: dict[Path, list[str]] = {}  # what the walk's end undid, for the next command's result
_moved: set[Path] = set()  # what was moved aside (`.git.made-by-command` is shaped like a bare one)
# the last name of each protected entry, folded: an entry named otherwise is none of them
_LAST_NAMES = frozenset(PurePath(entry.relative).parts[-1].casefold()
                        for entry in PROTECTED_ENTRIES)
# protected at the top only where they exist (no placeholder: an empty `.hg` would pass for a
# repository), so one a command makes there is moved aside like one below the top
_UNBOUND_WHEN_MISSING = frozenset(entry.relative for entry in PROTECTED_ENTRIES
                                  if entry.when_present)


def take(root: Path, *, since: Tree | None = None, marks: Path | None = None) -> Tree:
    """The tree of `root` now, built from the last one taken (blocking: a worker thread), with
    the `.pyc` files written since the tree `since` (taken before the command). `marks` is
    where the unchecked commands of a first walk that gave up are kept until checked, for the
    next process should this one end first (`unchecked_runs.recall`)."""
    with _lock:
        previous = _latest.get(root)
    if previous is not None and previous.overflow:  # still walked in the background (`_finish`)
        return previous
    tree = _walk(root, previous, since=since)
    if previous is None and marks is not None:
        unchecked_runs.recall(root, marks, taken_ns=tree.taken_ns, walking=bool(tree.overflow))
    with _lock:
        _latest[root] = tree
    if tree.overflow:
        threading.Thread(target=_finish, args=(tree,), name="loopwright-planted-walk",
                         daemon=True).start()
    return tree


def unchecked(before: Tree) -> str | None:
    """The warning that what the command planted under `before.root` was not checked, the first
    time for that root in this process; else None."""
    if not before.overflow:
        return None
    with _lock:
        said = before.root in _reported
        _reported.add(before.root)
    if said:
        return None
    return (f"loopwright could not yet check what commands plant in {before.root} "
            f"({before.overflow}): the protected names it found so far are read-only, and "
            "when it has walked them all, in the background, whatever was written there while "
            "such a command ran is taken for the commands', not yours (a .pyc removed, a "
            "repository or editor's folder moved aside)")


@dataclass(kw_only=True)
class Undone:
    """What `undo` did: one line each, and the repositories it moved aside (the user may keep
    them: `put_back`)."""

    notes: list[str] = field(default_factory=list)
    repositories: list[Aside] = field(default_factory=list)


def started(before: Tree) -> int | None:
    """A command is about to start, `before` taken: when it starts unchecked (the first walk
    has not ended), the token of its span for `undo`, else None."""
    return unchecked_runs.begin(before.root) if before.overflow else None


def undo(before: Tree, token: int | None = None) -> Undone:
    """Remove the `.pyc` files and move aside the protected names below the top that appeared
    or changed since `before`, or in the spans of the commands the first walk left unchecked
    (`token`, from `started`, if this one is one of them)."""
    if token is not None:
        unchecked_runs.end(before.root, token)
    if not before.overflow:
        return _undo_since(before)
    with _lock:
        walked = _latest.get(before.root)
    if walked is None or walked.overflow:  # `unchecked` says so; the walk's end checks it
        return Undone()
    return _undo_since(walked)  # taken after this command began: its span tells the rest


def _undo_since(before: Tree) -> Undone:
    with _lock:
        undone = Undone(notes=_pending.pop(before.root, []))
    spans = unchecked_runs.current(before.root)
    if spans is not None:
        before = replace(before, window=spans)
    after = take(before.root, since=before)  # never gives up: `before` was taken whole
    _move_aside(before, after, undone)
    removed, failed = _remove_compiled(before, after)
    undone.notes += failed
    if removed:
        shown = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3
                                          else "")
        undone.notes.append(f"loopwright removed {len(removed)} compiled Python file(s) the "
                            f"command wrote ({shown}): Python writes them again from the sources")
    if after.startup:
        undone.notes.append(_startup_note(before.root, after.startup))
    if spans is not None:
        unchecked_runs.checked(before.root, spans)
    return undone


def _startup_note(root: Path, written: list[str]) -> str:
    shown = [os.path.relpath(path, root) for path in written]
    listed = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
    return (f"warning: the command wrote {listed}, which Python runs (or starts from) at every "
            "start of that environment, outside the sandbox too (VS Code's Python extension "
            "starts a workspace's environment when you open the folder); an install writes "
            "such files as well, so they are left: look at them unless it installed packages")


def _finish(partial: Tree) -> None:
    """The walk `partial` gave up, taken to its end (what it read is kept while unchanged),
    and what the commands meanwhile left is undone: anything written while they ran."""
    tree = _walk(partial.root, partial, since=None)
    with _lock:
        _latest[partial.root] = tree
    undone = _undo_since(tree)  # a command still running is checked again when it ends
    with _lock:  # no one to ask about keeping a repository: the notes say where it is
        _pending.setdefault(partial.root, []).extend(undone.notes)


def _walk(root: Path, previous: Tree | None, *, since: Tree | None) -> Tree:
    """Each directory is `lstat`ed; one whose inode and times are those of the last tree's
    listing, changed longer ago than the clock's tick before that tree was taken, is not read
    again: making, removing or renaming an entry sets its directory's ctime, which no command
    can set back (`touch -d` sets the mtime, and the ctime to now). A file's content is not
    covered by that: a `.pyc` rewritten in place is found by its own ctime (`since`)."""
    tree = Tree(root=root, taken_ns=time.time_ns())
    old = previous.directories if previous is not None else {}
    racy_after = (previous.taken_ns if previous is not None else 0) - RACY_NS
    deadline = time.monotonic() + FIRST_WALK_SECONDS if previous is None else None
    directories = tree.directories
    pending = [(str(root), _OWN)]
    while pending:
        directory, kind = pending.pop()
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
            known = _listing(root, directory, info, kind)
            if known is None:
                continue
        directories[directory] = known
        pending.extend(known.children)
        if known.protected or known.bare:
            _note_protected(tree, directory, known, kind)
        if since is not None and known.compiled:
            tree.compiled += _written_since(since, directory, known.compiled)
        if since is not None and known.startup:
            tree.startup += _written_since(since, directory, known.startup)
    return tree


def _note_protected(tree: Tree, directory: str, listing: Listing, kind: int) -> None:
    for name in listing.protected:
        path = Path(directory, name)
        (tree.loose if kind == _INSIDE_DEPENDENCY else tree.nested).append(path)
        if kind != _INSIDE_DEPENDENCY and name.casefold() == ".git":
            tree.pointed.extend(_pointed_at(Path(directory)))
    if listing.bare:
        tree.bare.append(Path(directory))
        if kind != _INSIDE_DEPENDENCY and directory != str(tree.root):
            tree.held.append(Path(directory))


def _written_since(before: Tree, directory: str, names: tuple[str, ...]) -> list[str]:
    """The `.pyc` files of `directory` the command made, linked, renamed in or rewrote: the
    folder did not list them before, or their ctime — set to now by every write, link and
    rename, never settable back — is not older than `before` by a clock tick. So the tree
    before a command needs no `lstat` of each `.pyc`, only its folder's entries."""
    listing = before.directories.get(directory)
    known = listing.entries if listing is not None else {}
    written: list[str] = []
    for name in names:
        path = f"{directory}/{name}"
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if known.get(name) != info.st_ino or _written_in(before, info.st_ctime_ns):
            written.append(path)
    return written


def _listing(root: Path, directory: str, info: os.stat_result, kind: int) -> Listing | None:
    """The directory read again, and its `.pyc` files. In the project's own folders every
    protected name counts; at a dependency folder's top, the protected names; deeper in it,
    repositories alone (its `.vscode` is not the project's: no editor runs it)."""
    entries: dict[str, int] = {}
    children: list[tuple[str, int]] = []
    inner = _OWN if kind == _OWN else _INSIDE_DEPENDENCY
    protected: list[str] = []
    compiled: list[str] = []
    startup: list[str] = []
    # where Python reads `.pth` files and imports `sitecustomize` from at its start
    site = os.path.basename(directory) in ("site-packages", "dist-packages")
    try:
        with _scandir(directory) as listed:
            for entry in listed:
                entries[entry.name] = entry.inode()
                folded = entry.name.casefold()
                if folded in _LAST_NAMES:
                    relative = (*Path(directory).relative_to(root).parts, entry.name)
                    name = protected_entry_at(relative)
                    if name is not None:  # at the top: mounted read-only already; not descended
                        if (len(relative) > len(PurePath(name).parts) or
                                name in _UNBOUND_WHEN_MISSING) and (
                                kind != _INSIDE_DEPENDENCY or folded in REPOSITORY_NAMES):
                            protected.append(entry.name)
                        continue
                if kind != _INSIDE_DEPENDENCY and folded.endswith(WORKSPACE_FILE_SUFFIX) and \
                        not entry.is_dir(follow_symlinks=False):  # at the top too: not bound
                    protected.append(entry.name)
                    continue
                if entry.is_dir(follow_symlinks=False):
                    children.append((entry.path, _DEPENDENCY_TOP if kind == _OWN and
                                     entry.name in DEPENDENCY_DIRS else inner))
                # a `__pycache__` link leads Python to a cache where no one looks; in a
                # dependency folder too: a venv's Python runs its `.pyc` files unseen
                elif entry.name.endswith(".pyc") or (
                        entry.name == "__pycache__" and entry.is_symlink()):
                    compiled.append(entry.name)
                elif entry.name == "pyvenv.cfg" or (entry.name.endswith(STARTUP) and site):
                    startup.append(entry.name)
    except OSError:
        return None
    bare = BARE_HEAD in entries and any(names.issubset(entries) for names in BARE_WITH)
    return Listing(inode=info.st_ino, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns,
                   entries=entries, children=tuple(children),
                   protected=tuple(protected), compiled=tuple(compiled),
                   startup=tuple(startup), bare=bare)


def _move_aside(before: Tree, after: Tree, undone: Undone) -> None:
    """By inode, not path: in a dependency folder a repository can be removed and made again.
    One that was there is not bound read-only in a dependency folder, nor anywhere while the
    first walk ran: what makes git run something in it is looked at (`changes.configured_in`)."""
    window = before.window
    for path in (*after.nested, *after.loose):
        repository = path.name.casefold() in REPOSITORY_NAMES
        what = "a repository" if repository else path.name
        # `.hg` at the top, where it exists, is bound read-only for every command: theirs only
        # if made (by inode), never by a change within the window
        bound = path.parent == before.root and path.name in _UNBOUND_WHEN_MISSING
        if _new_entry(before, path):
            _set_aside(path, what, path, undone, keepable=repository and not window)
        elif window and not bound and changed_in(path, window):
            _set_aside(path, what, path, undone, keepable=False, why=_DURING_WALK)
        elif repository and path in before.loose and configured_in(path, Span(before.taken_ns)):
            _set_aside(path, what, path, undone, keepable=False, why=_CONFIGURED)
    held = set(after.held)
    for folder in after.bare:  # its HEAD, not the folder: files a model made stay where asked
        with _lock:
            if folder in _moved:
                continue
        if not _was_bare(before, folder):
            _set_aside(folder / BARE_HEAD, "a bare repository", folder, undone,
                       keepable=not window)
        elif window and changed_in(folder, window):
            _set_aside(folder / BARE_HEAD, "a bare repository", folder, undone,
                       keepable=False, why=_DURING_WALK)
        elif folder not in held and configured_in(folder, Span(before.taken_ns)):
            _set_aside(folder / BARE_HEAD, "a bare repository", folder, undone,
                       keepable=False, why=_CONFIGURED)


_CONFIGURED = "changed the git configuration or hooks of"
_DURING_WALK = "made or changed, unchecked while the first walk ran,"


def _set_aside(path: Path, what: str, where: Path, undone: Undone, *, keepable: bool,
               why: str = "made") -> None:
    """`path` renamed to the free `NAME.made-by-command`, and the line that says so."""
    aside = aside_path(path, MADE_SUFFIX)
    try:
        _writably(path.parent, functools.partial(os.rename, path, aside))
    except OSError as exc:
        undone.notes.append(
            f"the command {why} {where}, which is run or obeyed outside the sandbox, and "
            f"moving it aside failed ({exc}): delete it before you open that folder in an "
            "editor or agent, or run git there")
        return
    with _lock:
        _moved.add(aside)
    if path == where:
        undone.notes.append(
            f"loopwright moved {what} the command {why} at {path} to "
            f"{aside.name}: programs started there would run or obey it outside the sandbox")
    else:
        undone.notes.append(
            f"loopwright moved {path.name} of {what} the command made, {where}, to "
            f"{aside.name}: git run in that folder would run what its config says outside "
            "the sandbox")
    if keepable:
        undone.repositories.append(Aside(path=path, aside=aside, repository=where,
                                         seen=_fingerprint(aside, where)))


def undo_made(missing: Sequence[tuple[Path, Path]]) -> list[str]:
    """Move aside each of the files git reads as its config that were `missing` (a root and
    the path in it) before the command and are there now (`git_hooks.missing_included_configs`):
    one line each. A link on the way is what goes, not the file it leads to (elsewhere, maybe
    the user's own, outside the workspace)."""
    undone = Undone()
    for root, path in missing:
        if path.is_file():
            made = _first_link(root, path)
            _set_aside(made, made.name, made, undone, keepable=False)
    return undone.notes


def _first_link(root: Path, path: Path) -> Path:
    """The first symbolic link on the way from `root` down to `path`, else `path`."""
    parts = path.relative_to(root).parts
    for depth in range(1, len(parts)):
        step = Path(root, *parts[:depth])
        if step.is_symlink():
            return step
    return path


@dataclass(frozen=True, kw_only=True)
class Aside:
    """A repository a command made, moved aside: `path` renamed to `aside` (its `.git`, or the
    `HEAD` of a bare one); `seen` is how `repository` looked just after."""

    path: Path
    aside: Path
    repository: Path
    seen: frozenset[tuple[str, int, int, int]]


def put_back(moved: Aside) -> str:
    """`moved` renamed back where the command made it — the user said to keep it — unless it
    changed since it was moved aside (a command running meanwhile): one line saying which."""
    if os.path.lexists(moved.path) or _fingerprint(moved.aside, moved.repository) != moved.seen:
        return (f"loopwright left the repository the command made at {moved.aside}: it changed "
                "after it was moved aside, so it is not what the command made")
    try:
        _writably(moved.path.parent, functools.partial(os.rename, moved.aside, moved.path))
    except OSError as exc:
        return f"loopwright could not put back {moved.path} from {moved.aside.name} ({exc})"
    return f"loopwright kept the repository the command made, {moved.repository}, as allowed"


def _fingerprint(aside: Path, repository: Path) -> frozenset[tuple[str, int, int, int]]:
    """Every entry of the moved `.git` (or of the bare repository's folder): name, inode, ctime
    and size — what a write anywhere in it changes."""
    top = aside if aside.is_dir() and not aside.is_symlink() else repository
    seen = {_stamp(aside, "")}
    for folder, folders, files in os.walk(top):
        seen.update(_stamp(Path(folder, name), os.path.relpath(Path(folder, name), top))
                    for name in (*folders, *files))
    return frozenset(seen)


def _stamp(path: Path, name: str) -> tuple[str, int, int, int]:
    try:
        info = os.lstat(path)
    except OSError:
        return name, 0, 0, 0
    return name, info.st_ino, info.st_ctime_ns, info.st_size


def _was_bare(before: Tree, folder: Path) -> bool:
    """Whether `folder` was shaped like a git directory before, with the same `HEAD`."""
    listing = before.directories.get(str(folder))
    if listing is None or not listing.bare:
        return False
    try:
        return listing.entries.get(BARE_HEAD) == os.lstat(folder / BARE_HEAD).st_ino
    except OSError:
        return True  # gone: nothing to move


def _written_in(before: Tree, ctime_ns: int) -> bool:
    """Whether a file with this ctime was written since `before`, or in its window."""
    return Span(before.taken_ns).holds(ctime_ns) or (
        before.window is not None and before.window.holds(ctime_ns))


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

