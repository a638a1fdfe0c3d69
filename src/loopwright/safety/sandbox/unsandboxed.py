"""Fail closed where no sandbox can be made: which commands may still run without approval.

Only commands that plainly cannot change anything: one simple command, no shell syntax at all
(no redirections, pipes, chains, substitutions, variables, quotes or globs), a program from a
short list of tools that have no option to write files or run other programs, and no argument
that names a secrets file or leaves the working directory. Arguments are judged where they
really lead: each one (and the value of an option, `--file=X` or `-fX`) is resolved in the
command's directory with every symlink followed, so `cat notes.txt` with `notes.txt ->
~/.ssh/id_rsa` is judged as reading `~/.ssh/id_rsa`. Everything else needs the user's approval.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from loopwright.builtin.workspace import is_secret_path

_READ_ONLY_PROGRAMS = frozenset({
    "ls", "pwd", "cat", "head", "tail", "wc", "stat", "du", "df", "echo", "whoami", "id",
    "uname", "which", "realpath", "basename", "dirname", "grep", "egrep", "fgrep", "diff", "cmp",
    "md5sum", "sha1sum", "sha256sum", "true", "false", "nproc",
})
_PLAIN_WORDS = re.compile(r"[A-Za-z0-9_./,:=@%+-]+( +[A-Za-z0-9_./,:=@%+-]+)*")  # no globs
# options with which a program prints what symlinks met *inside* a directory it walks point at
# (`grep -R`; `diff -r` always follows them): the arguments alone do not say what is read
_WALKS_INTO_LINKS = {
    "grep": re.compile(r"^(-[A-Za-z]*R[A-Za-z0-9]*|--dereference-recursive)$"),
    "diff": re.compile(r"^(-[A-Za-z]*r[A-Za-z0-9]*|--recursive)$"),
}
_WALKS_INTO_LINKS["egrep"] = _WALKS_INTO_LINKS["fgrep"] = _WALKS_INTO_LINKS["grep"]
# programs that, given a directory, read the files in it (`diff dir1 dir2` compares the files
# both hold, without -r too), following the symlinks among them
_READS_DIRECTORIES = frozenset({"diff"})


def is_plainly_read_only(command: str, cwd: str | Path | None = None) -> bool:
    """True only for commands that cannot write, run other programs or read secrets.

    `cwd` is the directory the command runs in: arguments are resolved there, symlinks
    included (without it, the process's working directory). This touches the filesystem:
    call it from a worker thread on an event loop."""
    text = command.strip()
    if not _PLAIN_WORDS.fullmatch(text):
        return False
    program, *arguments = text.split()
    if program not in _READ_ONLY_PROGRAMS:
        return False
    root = Path(cwd if cwd is not None else os.getcwd()).resolve()
    walks = _WALKS_INTO_LINKS.get(program)
    for argument in arguments:
        if walks is not None and walks.match(argument):
            return False
        values = _path_candidates(argument)
        if not all(_stays_plain(value, root) for value in values):
            return False
        if program in _READS_DIRECTORIES and any((root / v).is_dir() for v in values):
            return False
    return True


def _path_candidates(argument: str) -> list[str]:
    """What an argument may name as a file: itself, an option's value after `=`, and a short
    option's attached value (`-fnotes.txt` reads `notes.txt` with grep)."""
    if not argument.startswith("-"):
        return [argument]
    candidates = [argument.split("=", 1)[1]] if "=" in argument else []
    if not argument.startswith("--") and len(argument) > 2:
        candidates.append(argument[2:])
    return [value for value in candidates if value]


def _stays_plain(value: str, root: Path) -> bool:
    """The value, as written and as resolved (symlinks followed), stays in `root` and is no
    secrets file."""
    path = PurePosixPath(value)
    if value.startswith("/") or ".." in path.parts or is_secret_path(Path(value)):
        return False
    try:
        resolved = (root / value).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a name too long
        return False
    return resolved.is_relative_to(root) and not is_secret_path(resolved)
