"""What is running, on stderr: a spinner with elapsed time while the model thinks and one compact
line per tool call while it runs (name + the argument that matters), each replaced by its
outcome when it ends.

On a terminal the running lines live in a transient `rich.live.Live` region; elsewhere (a pipe, a
file, a dumb terminal) only the finished lines are printed, plainly.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from loopwright.cli.inert import escape_controls

SUBJECT_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task", "name",
                "question")
"""The argument that says what a tool call is about, first found wins."""
SUBJECT_WIDTH = 60
"""Characters of that argument shown in a tool line (its full text is in the session log)."""
PREVIEW_WIDTH = 80
"""Characters of a tool's output shown in its outcome line."""


def call_subject(arguments: dict[str, Any] | str) -> str:
    """The argument that matters in a tool call, on one line, control characters escaped."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return _cut(escape_controls(" ".join(arguments.split())), SUBJECT_WIDTH)
        arguments = parsed if isinstance(parsed, dict) else {"value": parsed}
    value: Any = next((arguments[k] for k in SUBJECT_KEYS if isinstance(arguments.get(k), str)),
                      None)
    if value is None:
        value = " ".join(f"{k}={v}" for k, v in arguments.items() if not isinstance(v, dict | list))
    return _cut(escape_controls(" ".join(str(value).split())), SUBJECT_WIDTH)


def outcome_preview(content: str, is_error: bool) -> str:
    """A short description of a tool's output: an error's first line, else its size."""
    lines = content.splitlines() or [""]
    if is_error:
        return _cut(escape_controls(lines[0]), PREVIEW_WIDTH)
    if len(lines) == 1:
        return _cut(escape_controls(lines[0]), PREVIEW_WIDTH)
    return f"{len(lines)} lines"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class Activity:
    """The running lines (thinking, tool calls) and their finished outcomes."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live_enabled = console.is_terminal and not console.is_dumb_terminal
        self._live: Live | None = None
        self._thinking: float | None = None  # when the model call started
        self._reasoning = 0  # characters of hidden reasoning so far in this model call
        self._tools: dict[str, tuple[str, float]] = {}  # call id → (line, started)
        self._spinners: dict[str, Spinner] = {}  # kept, so each one keeps animating
        self._paused = 0

    # -- what runs --

    def thinking(self) -> None:
        self._thinking = time.monotonic()
        self._refresh()

    def reasoning(self, chars: int) -> None:
        """The model has reasoned `chars` characters so far (hidden): the spinner says so."""
        self._reasoning = chars
        if self._thinking is not None:
            self._refresh()

    def stop_thinking(self) -> None:
        if self._thinking is not None:
            self._thinking = None
            self._refresh()

    def tool_started(self, call_id: str, name: str, arguments: dict[str, Any] | str,
                     agent: str) -> None:
        self._thinking = None
        prefix = f"[{agent}] " if agent else ""
        self._tools[call_id] = (f"{prefix}{name} {call_subject(arguments)}".rstrip(),
                                time.monotonic())
        if not self.live_enabled:
            self.console.print(Text(f"→ {self._tools[call_id][0]}", style="cyan"),
                               soft_wrap=True)
        self._refresh()

    def tool_finished(self, call_id: str, name: str, content: str, is_error: bool,
                      duration: float, agent: str) -> None:
        line, _ = self._tools.pop(call_id, (f"{'[' + agent + '] ' if agent else ''}{name}", 0.0))
        mark, style = ("✗", "red") if is_error else ("✓", "green")
        text = Text(f"{mark} {line}", style=style)
        text.append(f" · {duration:.2f}s · {outcome_preview(content, is_error)}", style="dim")
        self.print(text)
        self._refresh()

    def print(self, renderable: Any) -> None:
        """A permanent line above the running ones (through the live region when it is up)."""
        soft = not self.live_enabled
        if self._live is not None:
            self._live.console.print(renderable, soft_wrap=soft)
        else:
            self.console.print(renderable, soft_wrap=soft)

    # -- the live region --

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No live region while inside (a prompt is asking the user something)."""
        self._paused += 1
        self._refresh()
        try:
            yield
        finally:
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
        lines: list[Any] = []
        for key, (label, started) in running.items():
            spinner = self._spinners.setdefault(key, Spinner("dots", style="cyan"))
            spinner.update(text=Text.assemble((label, "cyan"), (f" {now - started:.1f}s", "dim")))
            lines.append(spinner)
        return lines


class _Running:
    """The live region's content, rebuilt at every refresh so elapsed times tick."""

    def __init__(self, activity: Activity) -> None:
        self.activity = activity

    def __rich__(self) -> Group:
        return Group(*self.activity.running_lines())
