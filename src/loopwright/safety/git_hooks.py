"""Where git looks for hooks: `.git/hooks`, or the directory `core.hooksPath` names (husky sets
`core.hooksPath=.husky`). A hooks directory inside the workspace must stay unwritable, whether it
exists yet or not, or a sandboxed command could plant a hook the user's next `git commit` runs.
So must each submodule's `.git`, which the top's `git status` follows into a git directory.

The configuration is read, never run: git itself is not started (a hostile repository config
could name programs), files are read with a size cap, at most `_MAX_FILES` of them, includes
(`include.path`, `includeIf.*.path`, whatever the condition: protecting too much is safe) followed
to a bounded depth. Every `core.hooksPath` value seen counts, not only the last one git would use.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

_MAX_BYTES = 256 * 1024
_MAX_FILES = 16
_MAX_DEPTH = 4
_MAX_SUBMODULES = 64
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_ENTRY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def git_dir_of(root: Path) -> Path | None:
    """The git directory of the repository whose top is `root`: `root/.git`, or where a `.git`
    file (`gitdir: …`, a worktree or submodule) points; None without one."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if not dot_git.is_file():
        return None
    text = _read(dot_git) or ""
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:") or not first[len("gitdir:"):].strip():
        return None
    target = Path(first[len("gitdir:"):].strip())
    return (target if target.is_absolute() else root / target).resolve()


def repository_top(path: Path) -> Path | None:
    """The top of the working tree `path` is in: `path` itself or the nearest parent holding a
    `.git` (directory or file); None outside any repository."""
    for directory in (path, *path.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def hooks_dirs(root: Path) -> list[Path]:
    """The directories `core.hooksPath` names for the repository `root` is in (at its top or
    in a folder of it: a monorepo's package) in any configuration git would read (system,
    global, the repository's, a worktree's); relative values are taken from the repository's
    top, where git runs hooks."""
    top = _top(root)
    found: list[Path] = []
    for value in _configured(top)[0]:
        path = Path(os.path.expanduser(value))
        resolved = (path if path.is_absolute() else top / path).resolve()
        if resolved not in found:
            found.append(resolved)
    return found


def included_configs(root: Path) -> list[Path]:
    """The existing files git's configuration includes (`include.path`, `includeIf.*.path`)
    for the repository `root` is in: a project that shares settings by `include.path =
    ../.gitconfig` keeps a file in its working tree that git reads as its own config, so a
    `core.fsmonitor` written there runs at the user's next git command. A missing one is left
    (a placeholder directory there makes git stop reading its config)."""
    return [path for path in _configured(_top(root))[1] if path.is_file()]


def missing_included_configs(root: Path) -> list[Path]:
    """The files git's configuration includes for the repository `root` is in that are not
    there (yet): an optional one (`include.path = ../.gitconfig.local`) cannot be bound, so
    one a command makes is moved aside when it has ended (`sandbox/planted.py`)."""
    return [path for path in _configured(_top(root))[1] if not path.is_file()]


def _top(root: Path) -> Path:
    """Where the configuration of the repository `root` is in is read from: `root` itself when it
    is a bare repository (a test's `fixtures/lib.git`, the git directory of whoever works in
    it), else the top of the working tree it is in, else `root`."""
    return root if _is_bare(root) else repository_top(root) or root


def _is_bare(folder: Path) -> bool:
    return not os.path.lexists(folder / ".git") and (folder / "HEAD").is_file() and \
        (folder / "config").is_file()


def _configured(top: Path) -> tuple[list[str], list[Path]]:
    """The `core.hooksPath` values and the included files of every configuration git reads for
    the repository at `top`."""
    values: list[str] = []
    included: list[Path] = []
    seen: set[Path] = set()
    for config in _config_files(top):
        values += _hooks_values(config, seen, included, depth=0)
    return values, included


def submodule_git_paths(root: Path) -> list[Path]:
    """What keeps each submodule of the repository at `root` from being pointed at a planted git
    directory: its `.git` (a `gitdir:` file or a directory) where it exists, else its folder
    while that is empty or missing (an unpopulated or deleted submodule: nothing to edit
    there, and a folder with a `.git` made there would make it populated; a missing folder
    gets the sandbox's placeholder, an empty directory, which is what git itself leaves for a
    submodule not checked out). git runs `git status` inside each populated submodule from the
    top's own `git status`, so a planted `core.fsmonitor` would run there. Found from the
    absorbed submodules' configs (`.git/modules/**/config`, `core.worktree`) and the paths
    `.gitmodules` names, each bounded; never a missing `.git` (its placeholder, an empty
    directory, would make git fail on the submodule)."""
    git_dir = git_dir_of(root)
    if git_dir is None:
        return []
    folders: list[Path] = []
    for config in _module_configs(common_dir(git_dir) / "modules"):
        for section, key, value in _entries(_read(config) or ""):
            if section == "core" and key == "worktree" and value:
                folders.append(_under(config.parent, value))
    for section, key, value in _entries(_read(root / ".gitmodules") or "")[:_MAX_SUBMODULES]:
        if section.startswith("submodule.") and key == "path" and value:
            folders.append(_under(root, value))
    found: list[Path] = []
    for folder in dict.fromkeys(folders):
        if folder == root or not folder.is_relative_to(root):
            continue
        if os.path.lexists(folder / ".git"):
            found.append(folder / ".git")
        elif not os.path.lexists(folder) or (folder.is_dir() and not folder.is_symlink()
                                              and _is_empty(folder)):
            found.append(folder)
    return found


def _is_empty(folder: Path) -> bool:
    try:
        with os.scandir(folder) as listing:
            return next(listing, None) is None
    except OSError:
        return False


def _module_configs(modules: Path) -> list[Path]:
    """The `config` of each absorbed submodule's git directory under `modules` (a name may hold
    slashes: `modules/vendor/lib/config`), nested ones in their `modules/` too — without
    walking any git directory's objects, and bounded."""
    found: list[Path] = []
    pending, visited = [modules], 0
    while pending and visited < _MAX_SUBMODULES * 4 and len(found) < _MAX_SUBMODULES:
        directory = pending.pop()
        visited += 1
        if (directory / "HEAD").is_file() and (directory / "config").is_file():
            found.append(directory / "config")  # a git directory: only its own submodules
            pending.append(directory / "modules")
            continue
        try:
            with os.scandir(directory) as listing:
                pending += sorted((Path(e.path) for e in listing
                                   if e.is_dir(follow_symlinks=False)), reverse=True)
        except OSError:
            continue
    return found


def _under(base: Path, value: str) -> Path:
    path = Path(value)
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _config_files(root: Path) -> list[Path]:
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
             xdg / "git" / "config",
             Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig")]
    git_dir = root if _is_bare(root) else git_dir_of(root)
    if git_dir is not None:
        common = common_dir(git_dir)
        files += [common / "config", git_dir / "config.worktree"]
    return files


def common_dir(git_dir: Path) -> Path:
    """A worktree's git directory names the shared one in its `commondir` file."""
    text = _read(git_dir / "commondir")
    if not text or not text.strip():
        return git_dir
    target = Path(text.strip().splitlines()[0])
    return (target if target.is_absolute() else git_dir / target).resolve()


def _hooks_values(config: Path, seen: set[Path], included: list[Path], *, depth: int
                  ) -> list[str]:
    """`core.hooksPath` values in `config` and the files it includes (added to `included`)."""
    try:
        config = config.expanduser().resolve()
    except (OSError, RuntimeError):
        return []
    if config in seen or len(seen) >= _MAX_FILES or depth > _MAX_DEPTH:
        return []
    seen.add(config)
    text = _read(config)
    if text is None:
        return []
    values: list[str] = []
    for section, key, value in _entries(text):
        if section == "core" and key == "hookspath" and value:
            values.append(value)
        elif (section == "include" or section.startswith("includeif")) and key == "path" \
                and value:
            path = Path(os.path.expanduser(value))
            path = Path(os.path.normpath(path if path.is_absolute() else config.parent / path))
            if path not in included:
                included.append(path)
            values += _hooks_values(path, seen, included, depth=depth + 1)
    return values


def _entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) triples, lowercased section (with its subsection) and key."""
    section = ""
    out: list[tuple[str, str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            match = _SECTION.match(line)
            section = ""
            if match:
                section = match.group(1).lower() + (f".{match.group(2)}" if match.group(2)
                                                    else "")
                line = line[match.end():].strip()
            if not line:
                continue
        match = _ENTRY.match(line)
        if match is None or not section:
            continue
        out.append((section, match.group(1).lower(), _value(match.group(2) or "")))
    return out


def _value(raw: str) -> str:
    """A config value without comments and quotes (`"a b" ; note` → `a b`)."""
    out: list[str] = []
    quoted = False
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            out.append({"n": "\n", "t": "\t"}.get(raw[index + 1], raw[index + 1]))
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out).strip()


def _read(path: Path) -> str | None:
    """At most `_MAX_BYTES` of a regular file (never a FIFO or device a hostile config names)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return os.read(descriptor, _MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(descriptor)
