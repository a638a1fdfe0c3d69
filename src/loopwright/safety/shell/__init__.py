"""The shell policy: what a command line would run, and how dangerous that is.

`classify_command(cmd, cwd=…)` parses the command with a real bash grammar (tree-sitter-bash,
see `parse.py`), opens every nested payload, and returns a `ShellVerdict`:

- `catastrophic`: a reason never to run it, not even with `--yes` / `approve_all`;
- `dangers`: reasons it needs the user's approval (dangerous commands, and anything that could
  not be seen: computed command words, `eval` of run-time text, code piped into a shell, text
  the parser cannot read, scripts written by the same command);
- `parts`: the normalised text of every simple command, which policy rules are matched against.

Scripts the command runs (`bash x.sh`, `./x.sh`, `source x.sh`) are read and checked too when
they exist and are shell scripts.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from loopwright.safety.protected import protected_reason
from loopwright.safety.shell.fallback import raw_catastrophic
from loopwright.safety.shell.parse import (
    MAX_COMMAND_CHARS,
    Script,
    SimpleCommand,
    parse_command,
)
from loopwright.safety.shell.paths import join_path
from loopwright.safety.shell.rules import (
    Targets,
    canonical_text,
    catastrophic,
    dangerous,
    resolved_values,
    written_words,
)
from loopwright.safety.shell.words import Word
from loopwright.safety.shell.wrappers import SHELLS

__all__ = ["MAX_COMMAND_CHARS", "ShellVerdict", "SimpleCommand", "classify_command",
           "parse_command"]

MAX_SCRIPT_BYTES = 64 * 1024
MAX_SCRIPT_DEPTH = 3
_PROGRAM_ROOTS = ("/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/nix/", "/snap/", "/System/",
                  "/Library/", "/Applications/")


@dataclass(frozen=True)
class ShellVerdict:
    """What the shell policy thinks of one command line."""

    catastrophic: str | None
    dangers: tuple[str, ...]
    parts: tuple[str, ...]
    opaque: tuple[str, ...] = ()  # the dangers that are "cannot be checked", not a known kind
    unreadable: bool = False
    aliases: tuple[str, ...] = ()  # other spellings of parts (`git -C x push` → `git push`)

    @property
    def needs_approval(self) -> bool:
        return bool(self.dangers)


def classify_command(command: str, *, cwd: str | None = None, home: str | None = None,
                     protected_paths: Iterable[str] = (), _depth: int = 0) -> ShellVerdict:
    """Classify `command` as run in `cwd` (default: the current directory).

    CPU-bound on long commands (bounded by `MAX_COMMAND_CHARS`): call it from a worker thread
    inside an event loop."""
    home = posixpath.normpath(home or os.path.expanduser("~"))
    cwd = posixpath.normpath(os.path.abspath(cwd or os.getcwd()))
    extra = list(protected_paths)
    script = parse_command(command, cwd=cwd, home=home)
    targets = Targets(home)
    fatal = f"a fork bomb ({script.fork_bomb})" if script.fork_bomb else None
    dangers: list[str] = []

    def protected(path: str) -> str | None:
        return protected_reason(Path(path), extra)

    for simple in script.commands:
        fatal = fatal or catastrophic(simple, targets)
        danger = dangerous(simple, home, protected)
        if danger and danger not in dangers:
            dangers.append(danger)
    opaque = list(script.opaque)
    for reason, inner in _scripts_run(script, home, extra, _depth):
        if inner is None:
            opaque.append(reason)
            continue
        fatal = fatal or (f"{inner.catastrophic} in {reason}" if inner.catastrophic else None)
        dangers.extend(f"{danger} in {reason}" for danger in inner.dangers)
        opaque.extend(f"{reason}: {why}" for why in inner.opaque)
    dangers.extend(reason for reason in opaque if reason not in dangers)
    if script.unreadable and fatal is None:
        fatal = raw_catastrophic(command)
    return ShellVerdict(catastrophic=fatal, dangers=tuple(dangers),
                        parts=tuple(simple.text for simple in script.commands),
                        opaque=tuple(opaque), unreadable=script.unreadable,
                        aliases=tuple(filter(None, map(canonical_text, script.commands))))


def _scripts_run(script: Script, home: str, extra: list[str], depth: int
                 ) -> list[tuple[str, ShellVerdict | None]]:
    """For each script file the command runs: (what to call it, its verdict) — or (why it
    needs approval, None) when it cannot be read."""
    if not script.script_runs:
        return []
    written = {path for simple in script.commands for word in written_words(simple)
               for path in resolved_values(word, simple.cwd)}
    out: list[tuple[str, ShellVerdict | None]] = []
    for word, cwd in script.script_runs:
        out.extend(_script_run(word, cwd, written, home, extra, depth))
    return out


def _script_run(word: Word, cwd: str | None, written: set[str], home: str, extra: list[str],
                depth: int) -> list[tuple[str, ShellVerdict | None]]:
    path = join_path(cwd, word.value)
    if path is None:
        return [("runs a script from a directory that is not known before the command runs",
                 None)]
    if path.startswith(_PROGRAM_ROOTS):
        return []
    if path in written:
        return [(f"runs the script {word.value} that the same command writes", None)]
    if depth >= MAX_SCRIPT_DEPTH:
        return [("scripts run other scripts too deeply to check", None)]
    try:
        with open(path, "rb") as handle:
            head = handle.read(MAX_SCRIPT_BYTES + 1)
    except FileNotFoundError:
        return [(f"runs the script {word.value}, which does not exist yet", None)]
    except OSError:
        return [(f"runs {word.value}, which cannot be read to check it", None)]
    if b"\0" in head[:8192] or not _is_shell_script(head):
        return []  # a compiled program, or a script for another interpreter
    if len(head) > MAX_SCRIPT_BYTES:
        return [(f"runs the script {word.value}, too large to check", None)]
    verdict = classify_command(head.decode("utf-8", errors="replace"), cwd=cwd, home=home,
                               protected_paths=extra, _depth=depth + 1)
    return [(f"the script {word.value}", verdict)]


def _is_shell_script(head: bytes) -> bool:
    if not head.startswith(b"#!"):
        return True  # run by a shell when it has no interpreter line
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").split()
    if not words:
        return True
    interpreter = posixpath.basename(words[0])
    if interpreter == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        interpreter = posixpath.basename(rest[0]) if rest else ""
    return interpreter in SHELLS
