"""Fail closed where no sandbox can be made: which commands may still run without approval.

Only commands that plainly cannot change anything: one simple command, no shell syntax at all
(no redirections, pipes, chains, substitutions, variables, quotes or globs), a program from a
short list of tools that have no option to write files or run other programs, and no argument
that names a secrets file or leaves the working directory. Everything else needs the user's
approval.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from loopwright.builtin.workspace import is_secret_path

_READ_ONLY_PROGRAMS = frozenset({
    "ls", "pwd", "cat", "head", "tail", "wc", "stat", "du", "df", "echo", "whoami", "id",
    "uname", "which", "realpath", "basename", "dirname", "grep", "egrep", "fgrep", "diff", "cmp",
    "md5sum", "sha1sum", "sha256sum", "true", "false", "nproc",
})
_PLAIN_WORDS = re.compile(r"[A-Za-z0-9_./,:=@%+-]+( +[A-Za-z0-9_./,:=@%+-]+)*")  # no globs


def is_plainly_read_only(command: str) -> bool:
    """True only for commands that cannot write, run other programs or read secrets."""
    text = command.strip()
    if not _PLAIN_WORDS.fullmatch(text):
        return False
    program, *arguments = text.split()
    if program not in _READ_ONLY_PROGRAMS:
        return False
    for argument in arguments:
        value = argument.split("=", 1)[-1] if argument.startswith("-") else argument
        path = PurePosixPath(value)
        if value.startswith("/") or ".." in path.parts or is_secret_path(Path(value)):
            return False
    return True
