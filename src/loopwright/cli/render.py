"""Events → terminal: the CLI is one more consumer of the run's event stream (DESIGN §4).

`TerminalRenderer` keeps stdout for the answer alone (text deltas, written as they arrive) and puts
everything else — tool calls, tool results, status notes, reasoning when asked for — on stderr as
short one-line notes, so `loopwright run "…" > answer.txt` captures just the answer.
`JsonLinesRenderer` writes every event as one JSON line (`--json`).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Protocol, TextIO

from rich.console import Console
from rich.text import Text

from loopwright.events import TERMINAL_TYPES, Event, event_to_json
from loopwright.result import RunResult

RESULT_PREVIEW = 100
"""Characters of a tool's output shown after its name (the model reads all of it; `sessions show`
prints it whole)."""


class Renderer(Protocol):
    """What the commands need from a renderer: take every event, print a side note."""

    def __call__(self, event: Event) -> None: ...

    def note(self, text: str) -> None: ...


_STOP_DESCRIPTIONS = {
    "max_turns": "the turn limit was reached",
    "budget_exhausted": "the iteration budget ran out",
    "loop_detected": "the model kept repeating the same tool call",
    "refused": "the model refused (the provider's content filter ended the reply)",
    "cancelled": "cancelled",
    "error": "the run failed",
}


def describe_stop(result: RunResult) -> str | None:
    """One line saying why a run did not complete, or None when it did."""
    if result.stop_reason == "completed":
        return None
    if result.stop_reason == "cancelled":
        return "cancelled"
    detail = result.error or _STOP_DESCRIPTIONS.get(result.stop_reason, "")
    return f"{result.stop_reason}: {' '.join(detail.split())}"


def describe_side_usage(result: RunResult) -> str | None:
    """One line on the side calls of a run (compaction, grading, …), or None without any."""
    parts = []
    for purpose, side in result.side_usage.items():
        usage = side.get("usage") or {}
        cost = side.get("cost")
        parts.append(f"{purpose} {side.get('calls', 0)}× {'/'.join(side.get('models') or [])} "
                     f"{usage.get('input_tokens', 0):,} in {usage.get('output_tokens', 0):,} out"
                     + (f" ${cost:.4f}" if isinstance(cost, float) else ""))
    return "side calls: " + "; ".join(parts) if parts else None


class JsonLinesRenderer:
    """Writes each event as one JSON line on `out`, flushed at once (for pipes and tools)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        self._out.write(event_to_json(event) + "\n")
        self._out.flush()

    def note(self, text: str) -> None:
        """Notes never go to stdout in JSON mode: it carries events only."""
        print(f"loopwright: {text}", file=sys.stderr, flush=True)


class TerminalRenderer:
    """Streams the answer to stdout and summarises everything else on stderr."""

    def __init__(self, *, out: TextIO | None = None, err: Console | None = None,
                 show_reasoning: bool = False) -> None:
        self._out = out or sys.stdout
        self._err = err or Console(stderr=True, highlight=False, soft_wrap=True)
        self._show_reasoning = show_reasoning
        self._line_open = False  # stdout holds text not yet ended by a newline
        self._reasoning_open = False  # stderr holds a reasoning stream not yet ended

    def __call__(self, event: Event) -> None:
        if event.type == "text_delta":
            if not event.agent:  # a sub-agent's prose is not our answer
                self._write_text(event.text)
        elif event.type == "reasoning_delta":
            if self._show_reasoning and not event.agent:
                self._write_reasoning(event.text)
        elif event.type == "tool_call":
            self._tool_call(event.name, event.arguments, event.agent)
        elif event.type == "tool_result":
            self._tool_result(event.name, event.content, event.is_error, event.duration,
                              event.agent)
        elif event.type == "status":
            self.note(f"{event.kind}: {event.message}", agent=event.agent)
        elif event.type in TERMINAL_TYPES and not event.agent:
            self.finish()
            result = getattr(event, "result", None)
            side = describe_side_usage(result) if isinstance(result, RunResult) else None
            if side:
                self.note(side)

    def note(self, text: str, *, agent: str = "", style: str = "dim") -> None:
        """A note on stderr, never cut: on a terminal it wraps at word boundaries to the width,
        to a pipe it stays one whole line."""
        self._close_lines()
        prefix = f"[{agent}] " if agent else ""
        self._err.print(Text(prefix + " ".join(text.split()), style=style),
                        soft_wrap=not self._err.is_terminal)

    def finish(self) -> None:
        """End the answer with a newline so the shell prompt starts on its own line."""
        self._close_reasoning()
        if self._line_open:
            self._out.write("\n")
            self._out.flush()
            self._line_open = False

    # -- pieces --

    def _write_text(self, text: str) -> None:
        if not text:
            return
        self._close_reasoning()
        self._out.write(text)
        self._out.flush()
        self._line_open = not text.endswith("\n")

    def _write_reasoning(self, text: str) -> None:
        self._reasoning_open = True
        self._err.print(Text(text, style="dim italic"), end="")

    def _tool_call(self, name: str, arguments: dict[str, Any] | str, agent: str) -> None:
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments,
                                                                        ensure_ascii=False)
        self.note(f"→ {name} {shown}", agent=agent, style="cyan")

    def _tool_result(self, name: str, content: str, is_error: bool, duration: float,
                     agent: str) -> None:
        mark, style = ("✗", "red") if is_error else ("✓", "green")
        self.note(f"{mark} {name} ({duration:.2f}s) {_one_line(content, RESULT_PREVIEW)}",
                  agent=agent, style=style)

    def _close_lines(self) -> None:
        self._close_reasoning()
        # Only a terminal shows stdout and stderr interleaved; a piped answer stays untouched.
        if self._line_open and _isatty(self._out):
            self._out.write("\n")
            self._out.flush()
            self._line_open = False

    def _close_reasoning(self) -> None:
        if self._reasoning_open:
            self._err.print()
            self._reasoning_open = False


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
