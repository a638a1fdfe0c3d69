"""Terminal prompts for the CLI: approving dangerous tool calls (y / n / always) and answering the
model's `clarify` questions.

Whatever the model wrote is shown with control characters escaped (`escape_controls`): a command
cannot move the cursor or overwrite the line to look like something else while it is approved.

Both read a line from the terminal through the event loop (`add_reader`), not a blocking thread,
so Ctrl-C cancels a run that waits on a prompt at once. Prompts are serialised: two tools of one
batch never ask at the same time. Off a terminal the CLI installs neither, so approvals fail closed
(denied unless `--yes`) and `clarify` tells the model no user is available.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TextIO

from loopwright.tools.policy import ApprovalAnswer

_screen: list[Callable[[], AbstractContextManager[None]]] = [contextlib.nullcontext]


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
        question = (f"\n! approval needed: {escape_controls(action)}\n"
                    f"    {_indent(escape_controls(detail, keep_newlines=True))}\n"
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
        with _screen[0]():
            return await _ask(prompt, stdin=stdin, out=out, loop=loop)


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


_INVISIBLE = frozenset({0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028, 0x2029, 0x2060, 0xFEFF,
                        *range(0x202A, 0x202F), *range(0x2066, 0x206A)})


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with control characters, bidi overrides and zero-width characters shown as
    escapes (`\\x1b`, `\\r`, `\\u202e`), so a command cannot repaint or hide part of itself
    in the prompt that approves it."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if (char == "\n" and keep_newlines) or char == "\t":
            out.append(char)
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append({"\r": "\\r", "\n": "\\n"}.get(char, f"\\x{code:02x}"))
        elif code in _INVISIBLE:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
