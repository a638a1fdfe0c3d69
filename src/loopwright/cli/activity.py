"""What is running, on stderr: a spinner with elapsed time while the model thinks and one compact
line per tool call while it runs (name + the argument that matters), each replaced by its
outcome when it ends. Below a command's outcome (and any tool's error) its first
`output_lines` lines are shown, long lines cut at a word; `verbose` shows all of them, and
`expand()` prints the whole output of the last batch of calls again (chat's `/expand`).

On a terminal the running lines live in a transient `rich.live.Live` region; elsewhere (a pipe, a
file, a dumb terminal) only the finished lines are printed, plainly.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from loopwright.cli.inert import escape_controls, inert

SUBJECT_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task", "name",
                "question")
"""The argument that says what a tool call is about, first found wins."""
SUBJECT_WIDTH = 60
"""Characters of that argument shown in a tool line (its full text is in the session log)."""
PREVIEW_WIDTH = 80
"""Characters of a tool's output shown in its outcome line."""
OUTPUT_LINES = 4
"""Lines of a command's output shown below its outcome line (the default of `--output-lines`)."""
OUTPUT_WIDTH = 240
"""Characters of one output line shown before it is cut (at a word); `verbose` shows it all."""


def call_subject(arguments: dict[str, Any] | str) -> str:
    """The argument that matters in a tool call, on one line, control characters escaped."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return cut_words(escape_controls(" ".join(arguments.split())), SUBJECT_WIDTH)
        arguments = parsed if isinstance(parsed, dict) else {"value": parsed}
    value: Any = next((arguments[k] for k in SUBJECT_KEYS if isinstance(arguments.get(k), str)),
                      None)
    if value is None:
        value = " ".join(f"{k}={v}" for k, v in arguments.items() if not isinstance(v, dict | list))
    return cut_words(escape_controls(" ".join(str(value).split())), SUBJECT_WIDTH)


def outcome_preview(content: str, is_error: bool) -> str:
    """A short description of a tool's output: its one line, else its size ("error" and its
    size for an error, whose lines are shown below in full)."""
    lines = content.splitlines() or [""]
    if is_error:
        return "error" if len(lines) == 1 else f"error · {len(lines)} lines"
    if len(lines) == 1:
        return cut_words(escape_controls(lines[0]), PREVIEW_WIDTH)
    return f"{len(lines)} lines"


def cut_words(text: str, width: int) -> str:
    """`text` at most `width` characters, cut after a whole word when it is longer."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    space = head.rfind(" ")
    return (head[:space] if space > width // 2 else head).rstrip() + "…"


_EXIT_CODE = re.compile(r"\[exit code (-?\d+)\]\s*\Z")


def exit_code(output: str) -> int | None:
    """The exit code a command's output ends with (`[exit code N]`, the shell tool's last
    line), or None."""
    found = _EXIT_CODE.search(output[-40:])
    return int(found.group(1)) if found else None


def _is_command(name: str, arguments: dict[str, Any] | str) -> bool:
    """A call whose output is worth seeing as it is: a shell command."""
    return name == "bash" or (isinstance(arguments, dict) and "command" in arguments)


class Activity:
    """The running lines (thinking, tool calls) and their finished outcomes."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live_enabled = console.is_terminal and not console.is_dumb_terminal
        self._live: Live | None = None
        self._thinking: float | None = None  # when the model call started
        self._reasoning = 0  # characters of hidden reasoning so far in this model call
        self._tools: dict[str, tuple[str, float]] = {}  # call id → (line, started)
        self._commands: set[str] = set()  # ids of running calls that are shell commands
        self.output_lines = OUTPUT_LINES
        self.verbose = False
        self.more_hint = "--verbose"  # how to see all of a cut output (chat: /expand)
        self.last_batch: list[tuple[str, str, bool]] = []  # (line, output, is_error) of the
        # last batch of calls
        self._batch_open = False
        self._spinners: dict[str, Spinner] = {}  # kept, so each one keeps animating
        self._paused = 0
        self._after_question = False  # the cursor is where a prompt's question left it

    # -- what runs --

    def thinking(self) -> None:
        self._thinking = time.monotonic()
        self._batch_open = False
        self._refresh()

    def reasoning(self, chars: int) -> None:
        """The model has reasoned `chars` characters so far (hidden): the spinner says so."""
        self._reasoning = chars
        if self._thinking is not None and self._live is None:  # (a live region shows the
            self._refresh()  # count at its next refresh: drawing it at every delta took seconds)

    def stop_thinking(self) -> None:
        if self._thinking is not None:
            self._thinking = None
            self._refresh()

    def tool_started(self, call_id: str, name: str, arguments: dict[str, Any] | str,
                     agent: str) -> None:
        self._thinking = None
        if not self._batch_open:
            self.last_batch, self._batch_open = [], True
        prefix = f"[{agent}] " if agent else ""  # (a model may make up any name)
        label = f"{prefix}{escape_controls(name)} {call_subject(arguments)}".rstrip()
        self._tools[call_id] = (label, time.monotonic())
        if _is_command(name, arguments):
            self._commands.add(call_id)
        if not self.live_enabled:
            self.console.print(Text(f"→ {self._tools[call_id][0]}", style="cyan"),
                               soft_wrap=True)
        self._refresh()

    def tool_finished(self, call_id: str, name: str, content: str, is_error: bool,
                      duration: float, agent: str) -> None:
        line, _ = self._tools.pop(call_id, (f"{'[' + agent + '] ' if agent else ''}{name}", 0.0))
        command = call_id in self._commands
        self._commands.discard(call_id)
        code = exit_code(content) if command else None
        failed = is_error or bool(code)  # a command that ran and exited non-zero failed too
        mark, style = ("✗", "red") if failed else ("✓", "green")
        # calls refused alike one after the other (over the per-reply limit, …) show the
        # error once
        previous = self.last_batch[-1] if self.last_batch else None
        repeated = is_error and previous is not None and previous[1:] == (content, True)
        text = Text(f"{mark} {line}", style=style)
        outcome = "the same error" if repeated else outcome_preview(content, is_error)
        text.append(f" · {duration:.2f}s · {f'exit {code} · ' if code else ''}{outcome}",
                    style="dim")
        self.print(text)
        self.last_batch.append((line, content, is_error))
        if not repeated and (is_error or (command and len(content.splitlines()) > 1)):
            self._output(content, limit=None if self.verbose else self.output_lines,
                         style="red" if is_error else "dim", cut=not is_error)
        self._refresh()

    def expand(self) -> bool:
        """Print the whole output of the last batch of tool calls; False when there was none."""
        for line, content, _ in self.last_batch:
            self.print(Text(f"· {line}", style="bold"))
            self._output(content, limit=None, style="default", cut=False)
        return bool(self.last_batch)

    def _output(self, content: str, *, limit: int | None, style: str, cut: bool) -> None:
        """The first `limit` lines of a tool's output (all with None), indented under its line;
        with `cut` (not for an error) a long line is cut after a word unless `verbose`; the
        rest is counted. A command's `[exit code 0]` is left out: its tick says so."""
        if not content.strip():
            return
        lines = inert(content).rstrip("\n").split("\n")
        if lines and lines[-1] == "[exit code 0]":
            lines.pop()
        shown = lines if limit is None else lines[:limit]
        whole = not cut or self.verbose
        texts = [Text(f"  │ {line if whole else cut_words(line, OUTPUT_WIDTH)}", style=style)
                 for line in shown]
        if len(lines) > len(shown):
            more = len(lines) - len(shown)
            texts.append(Text(f"  … {more:,} more line{'s' if more != 1 else ''} "
                              f"({self.more_hint} shows them)", style="dim"))
        self.print(Group(*texts))  # one print: each one draws the live region again

    def print(self, renderable: Any) -> None:
        """A permanent line above the running ones (through the live region when it is up)."""
        soft = not self.live_enabled
        if self._after_question:  # a line of its own, not the end of "Allow? …: ^C"
            self._after_question = False
            self.console.print()
        if self._live is not None:
            # under the region's lock: its refresh thread redrawing it between this print's
            # cursor moves and their writing erased a line (one in a few hundred)
            with self._live._lock:
                self._live.console.print(renderable, soft_wrap=soft)
        else:
            self.console.print(renderable, soft_wrap=soft)

    # -- the live region --

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No live region while inside (a prompt is asking the user something)."""
        self._paused += 1
        self._refresh()
        self._after_question = True
        try:
            yield
        finally:
            self._after_question = False  # answered: its Enter ended the line
            self._paused -= 1
            self._refresh()

    def stop(self) -> None:
        """Take the live region down (the answer is about to be written)."""
        self._thinking = None
        self._tools.clear()
        self._refresh()

    def _refresh(self) -> None:
        if not self.live_enabled:
            return
        busy = (self._thinking is not None or self._tools) and not self._paused
        if not busy:
            if self._live is not None:
                self._live.stop()
                self._live = None
            return
        if self._live is None:
            self._live = Live(_Running(self), console=self.console, transient=True,
                              refresh_per_second=8, redirect_stdout=False,
                              redirect_stderr=False)
            self._live.start()
        else:
            self._live.refresh()

    def running_lines(self) -> list[Any]:
        now = time.monotonic()
        running = dict(self._tools)
        if self._thinking is not None:
            label = f"thinking · {self._reasoning:,} chars" if self._reasoning else "thinking"
            running[""] = (label, self._thinking)
        for gone in set(self._spinners) - set(running):
            del self._spinners[gone]
        # no taller than the screen: a region taller is not cleared, and every line of it is
        # drawn again at each change (200 calls of one reply took seconds each to show)
        room = max(1, self.console.height - 2)
        shown = list(running.items())[:room - 1] if len(running) > room else running.items()
        lines: list[Any] = []
        for key, (label, started) in shown:
            spinner = self._spinners.setdefault(key, Spinner("dots", style="cyan"))
            spinner.update(text=Text.assemble((label, "cyan"), (f" {now - started:.1f}s", "dim")))
            lines.append(spinner)
        if len(lines) < len(running):
            lines.append(Text(f"  … {len(running) - len(lines):,} more running", style="dim"))
        return lines


class _Running:
    """The live region's content, rebuilt at every refresh so elapsed times tick."""

    def __init__(self, activity: Activity) -> None:
        self.activity = activity

    def __rich__(self) -> Group:
        return Group(*self.activity.running_lines())
