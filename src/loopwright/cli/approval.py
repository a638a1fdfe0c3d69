"""Terminal prompts for the CLI: approving dangerous tool calls (y / n / always) and answering the
model's `clarify` questions.

Whatever the model wrote is shown with control characters escaped (`escape_controls`): a command
cannot move the cursor or overwrite the line to look like something else while it is approved.
A file change that needs approval shows the diff it would make (the tool's preview, below the
reason in the request's detail), coloured on a terminal unless NO_COLOR is set.

Both read a line from the terminal through the event loop (`add_reader`), not a blocking thread,
so Ctrl-C cancels a run that waits on a prompt at once. Prompts are serialised: two tools of one
batch never ask at the same time. Off a terminal the CLI installs neither, so approvals fail closed
(denied unless `--yes`) and `clarify` tells the model no user is available.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TextIO

from loopwright.cli.inert import escape_controls
from loopwright.cli.typeahead import line_mode
from loopwright.safety.policy import ApprovalAnswer

_screen: list[Callable[[], AbstractContextManager[None]]] = [contextlib.nullcontext]
MAX_DIFF_LINES = 200  # lines of a proposed change a prompt shows; the rest is counted
MAX_BLANK_RUN = 16  # spaces in a row shown as they are; a longer run is shown as its count
_DIFF_COLOURS = (("+++ ", "1"), ("--- ", "1"), ("@@", "36"), ("+", "32"), ("-", "31"))


def set_prompt_screen(pause: Callable[[], AbstractContextManager[None]]) -> None:
    """What a prompt enters while it asks: the terminal renderer's `paused()`, which takes its
    live region (spinners) down so the question and the typed answer are not painted over."""
    _screen[0] = pause


# One prompt at a time per event loop (the CLI may run several loops one after another).
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary())


def terminal_prompts() -> dict[str, Any]:
    """`Agent` keyword arguments for an interactive terminal: `approval` and `clarify` prompts.

    Empty when stdin is not a terminal (CI, pipes): nothing may wait for a human there."""
    if not _is_terminal(sys.stdin):
        return {}
    return {"approval": TerminalApproval(), "clarify": TerminalClarify()}


class TerminalApproval:
    """Asks "Allow? [y]es / [n]o / [a]lways" on stderr; "always" is remembered per session."""

    def __init__(self, *, stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.out = out or sys.stderr

    async def __call__(self, action: str, detail: str) -> ApprovalAnswer:
        shown = show_detail(detail, colour=_wants_colour(self.out))
        question = (f"\n! approval needed: {escape_controls(action)}\n"
                    f"    {_indent(shown)}\n"
                    "  Allow? [y]es / [n]o / [a]lways (this session): ")
        answer = (await ask_line(question, stdin=self.stdin, out=self.out) or "").strip().lower()
        if answer in ("a", "always"):
            return "always"
        return answer in ("y", "yes")


class TerminalClarify:
    """Shows the model's question (and numbered options) and returns the typed answer."""

    def __init__(self, *, stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.out = out or sys.stderr

    async def __call__(self, question: str, options: list[str]) -> str:
        listed = "".join(f"    {n}. {escape_controls(option)}\n"
                         for n, option in enumerate(options, start=1))
        hint = "  Answer (a number or your own words): " if options else "  Answer: "
        shown = escape_controls(question, keep_newlines=True)
        answer = (await ask_line(f"\n? {shown}\n{listed}{hint}", stdin=self.stdin,
                                 out=self.out) or "").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        return answer


async def ask_line(prompt: str, *, stdin: TextIO, out: TextIO) -> str | None:
    """Print `prompt` and read one line without blocking the loop; None at end of input."""
    loop = asyncio.get_running_loop()
    lock = _locks.setdefault(loop, asyncio.Lock())
    async with lock:
        with _screen[0](), line_mode():
            line = await _ask(prompt, stdin=stdin, out=out, loop=loop)
        if line is None:  # Ctrl-D: no Enter ended the question's line
            out.write("\n")
            out.flush()
        return line


async def _ask(prompt: str, *, stdin: TextIO, out: TextIO, loop: asyncio.AbstractEventLoop
               ) -> str | None:
    out.write(prompt)
    out.flush()
    future: asyncio.Future[str] = loop.create_future()

    def ready() -> None:
        line = stdin.readline()
        if not future.done():
            future.set_result(line)

    try:
        fd = stdin.fileno()
        loop.add_reader(fd, ready)
    except (NotImplementedError, OSError, ValueError):  # no selectable stdin: read in a thread
        line = await asyncio.to_thread(stdin.readline)
        return line or None
    try:
        line = await future
    finally:
        loop.remove_reader(fd)
    return line or None


def show_detail(detail: str, *, colour: bool) -> str:
    """`detail` escaped, every line of it shown: runs of empty lines and of spaces are collapsed
    to a visible count, so nothing of the command can be pushed off the screen above the
    question; a unified diff in it (from `--- ` and `+++ ` lines on) at most `MAX_DIFF_LINES`
    long, its lines coloured when `colour`."""
    lines = escape_controls(detail, keep_newlines=True).split("\n")
    start = next((i for i in range(len(lines) - 1) if lines[i].startswith("--- ")
                  and lines[i + 1].startswith("+++ ")), None)
    if start is None:
        return "\n".join(_every_line(lines))
    diff = lines[start:]
    if len(diff) > MAX_DIFF_LINES:
        diff = [*diff[:MAX_DIFF_LINES],
                f"… {len(diff) - MAX_DIFF_LINES} more lines of the change not shown"]
    if colour:
        diff = [_paint(line) for line in diff]
    return "\n".join(_every_line(lines[:start]) + diff)


_BLANKS = re.compile(rf"[ \t]{{{MAX_BLANK_RUN},}}")


def _every_line(lines: list[str]) -> list[str]:
    """The lines of a command, each one visible: a run of more than one empty line becomes one
    `⟨N empty lines⟩`, a long run of spaces `⟨N spaces⟩`; a command of several lines ends with
    its line count, next to the question."""
    shown: list[str] = []
    empty = 0
    for line in [*lines, "x"]:  # the sentinel flushes a trailing run
        if not line.strip():
            empty += 1
            continue
        if empty:
            shown.append("" if empty == 1 else f"⟨{empty} empty lines⟩")
            empty = 0
        shown.append(_BLANKS.sub(lambda run: f"⟨{len(run.group())} spaces⟩", line))
    shown.pop()
    if len(lines) > 1:
        shown.append(f"({len(lines)} lines)")
    return shown


def _paint(line: str) -> str:
    for prefix, code in _DIFF_COLOURS:
        if line.startswith(prefix):
            return f"\x1b[{code}m{line}\x1b[0m"
    return line


def _wants_colour(stream: TextIO) -> bool:
    return (_is_terminal(stream) and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb")


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
