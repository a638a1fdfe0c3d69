"""Events → terminal: the CLI is one more consumer of the run's event stream (DESIGN §4).

`TerminalRenderer` keeps stdout for the answer alone and puts everything else — tool calls, tool
results, status notes, reasoning when asked for — on stderr as short notes. On a terminal the text
of every turn streams to stdout as it arrives; on a pipe stdout gets the final answer only, once
the run is done (the text of turns that went on to call tools goes to stderr), so
`loopwright run "…" > answer.md` captures just the answer.
`JsonLinesRenderer` writes every event as one JSON line (`--json`).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, TextIO

from rich.console import Console
from rich.text import Text

from loopwright.cli.activity import OUTPUT_LINES, Activity
from loopwright.cli.answer import AnswerStream
from loopwright.cli.approval import set_prompt_screen
from loopwright.cli.inert import InertConsole, inert
from loopwright.events import REPLY_ANEW, TERMINAL_TYPES, Event, StatusEvent, event_line
from loopwright.result import RunResult


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


def say(text: str, *, file: TextIO | None = None) -> None:
    """One `loopwright: …` message on stderr, never cut: a terminal gets it wrapped at word
    boundaries to its width, a pipe one whole line."""
    console = InertConsole(file=file or sys.stderr, highlight=False)
    console.print(Text(f"loopwright: {without_repeats(text)}"),
                  soft_wrap=not console.is_terminal)


def without_repeats(message: str) -> str:
    """An error message without the parts it repeats: a wrapped error often carries its cause's
    prefix again (`custom m (chat_completions): gave up after 6 attempts: custom m
    (chat_completions): HTTP 500`), and each part is said once."""
    parts = message.split(": ")
    kept = [part for n, part in enumerate(parts) if not part or part not in parts[:n]]
    return ": ".join(kept)


RESUMABLE_STOPS = frozenset({"max_turns", "budget_exhausted", "loop_detected", "usage_limit",
                             "cancelled"})


def resume_helps(result: RunResult) -> bool:
    """Whether continuing the run's session could finish it: a limit it hit, a cancel, or a
    provider failure that may pass (not a wrong model, key or request, nor a refusal)."""
    from loopwright.endpoints.retry import is_retryable_status
    from loopwright.errors import AuthError, ProviderError, RequestRejectedError

    if result.stop_reason in RESUMABLE_STOPS:
        return True
    cause = result.exception
    if result.stop_reason != "error" or not isinstance(cause, ProviderError):
        return False
    if isinstance(cause, AuthError | RequestRejectedError):
        return False
    return cause.status is None or is_retryable_status(cause.status, cause.body)


def describe_stop(result: RunResult) -> str | None:
    """One line saying why a run did not complete, or None when it did."""
    if result.stop_reason == "completed":
        return None
    if result.stop_reason == "cancelled":
        return "cancelled"
    detail = without_repeats(" ".join(
        (result.error or _STOP_DESCRIPTIONS.get(result.stop_reason, "")).split()))
    if detail.startswith(f"{result.stop_reason}: "):
        return detail
    return f"{result.stop_reason}: {detail}"


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


MAX_DIFF_LINES = 400
"""Lines of one turn's diff printed; the rest is counted (the JSON events carry all of it)."""


class JsonLinesRenderer:
    """Writes each event as one JSON line on `out`, flushed at once (for pipes and tools)."""

    show_reasoning = True  # reasoning events are in the stream whatever chat's /reasoning says

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        self._out.write(event_line(event) + "\n")
        self._out.flush()

    def note(self, text: str, *, agent: str = "", style: str = "", flat: bool = True) -> None:
        """Notes never go to stdout in JSON mode: it carries events only."""
        print(f"loopwright: {inert(text)}", file=sys.stderr, flush=True)

    def expand(self) -> None:
        """Tool output is whole in the `tool_result` events already."""


class TerminalRenderer:
    """The answer on stdout (Markdown on a terminal, raw on a pipe); on stderr a spinner while
    the model thinks, one line per tool call, coloured diffs of file changes, notes, and on a
    terminal a usage line per turn and a summary at the end.

    Reasoning is collapsed to one line saying how long it was and how to see it
    (`reasoning_hint`: a flag for `run`, a slash command in `chat`), or with `show_reasoning`
    streamed dimmed; `show_reasoning` may change between turns."""

    def __init__(self, *, out: TextIO | None = None, err: Console | None = None,
                 show_reasoning: bool = False, markdown: bool | None = None,
                 reasoning_hint: str = "--show-reasoning", output_lines: int = OUTPUT_LINES,
                 verbose: bool = False, more_hint: str = "--verbose") -> None:
        self._out = out or sys.stdout
        self._err = err or InertConsole(stderr=True, highlight=False)
        self.show_reasoning = show_reasoning
        self._reasoning_hint = reasoning_hint
        self._hidden_reasoning = 0  # characters of the current reasoning not shown
        self.answer = AnswerStream(self._out, markdown=markdown)
        self.activity = Activity(self._err)
        self.activity.output_lines, self.activity.verbose = output_lines, verbose
        self.activity.more_hint = more_hint
        # a pipe gets the final answer alone; the text of other turns is held back until the
        # turn shows what it was (it called tools: a note on stderr)
        self._final_only = not self.answer.markdown and not _isatty(self._out)
        self._held = ""
        self._terminal = self._err.is_terminal
        self._reasoning_open = False  # stderr holds a reasoning stream not yet ended
        self._started: float | None = None
        if self.activity.live_enabled:
            set_prompt_screen(self.activity.paused)  # approval prompts take the live region down

    def __call__(self, event: Event) -> None:
        if event.agent:  # a sub-agent: its tool calls and notes, never its prose
            self._sub_agent_event(event)
        elif event.type == "turn_start":
            self._started = self._started or time.monotonic()
            self._release_held()
            self.activity.thinking()
        elif event.type == "text_delta":
            self.activity.stop()
            self._close_reasoning()
            if self._final_only:
                self._held += event.text
            else:
                self.answer.write(event.text)
        elif event.type == "reasoning_delta":
            if self.show_reasoning:
                self._write_reasoning(event.text)
            else:
                self._hidden_reasoning += len(event.text)
                self.activity.reasoning(self._hidden_reasoning)
        elif event.type in ("tool_call", "tool_result", "status"):
            self._sub_agent_event(event)
        elif event.type == "review" and event.verdict != "skip_call":  # (a skipped call's
            # own ✗ line and note say it)
            self.note(f"review {event.check}: {event.verdict} ({event.reason})", agent=event.agent)
        elif event.type == "turn_end":
            self.activity.stop_thinking()
            if self._terminal and event.usage.get("requests"):
                self.note(f"turn {event.turn} · {usage_line(event.usage, cost=event.cost)}")
        elif event.type in TERMINAL_TYPES:
            if event.type == "done" and self._final_only:
                self._held = ""
                self.answer.write(event.result.output)
            self._release_held()
            self.finish()
            result = getattr(event, "result", None)
            side = describe_side_usage(result) if isinstance(result, RunResult) else None
            if side:
                self.note(side)
            if event.type == "done" and self._terminal:
                self._summary(event.result)

    def expand(self) -> None:
        """The whole output of the last batch of tool calls (chat's `/expand`)."""
        if not self.activity.expand():
            self.note("no tool output yet")

    def _release_held(self) -> None:
        """Held text that turned out not to be the answer: on stderr, as a note."""
        held, self._held = self._held, ""
        if held.strip():
            self.note(held)

    def _sub_agent_event(self, event: Event) -> None:
        if event.type == "tool_call":
            self._release_held()
            self._close_answer()
            self.activity.tool_started(event.id, event.name, event.arguments, event.agent)
        elif event.type == "tool_result":
            self.activity.tool_finished(event.id, event.name, event.content, event.is_error,
                                        event.duration, event.agent)
        elif event.type == "status":
            if event.kind in _DEBUGGING_KINDS and not self.activity.verbose:
                return
            if event.kind == "turn_diff" and isinstance(event.data.get("diff"), str):
                self._diff(event.message, event.data["diff"], event.agent)
            elif event.kind in _RETRY_KINDS:
                self._retried(event)
            else:
                self.note(_status_line(event.kind, event.message), agent=event.agent)

    def note(self, text: str, *, agent: str = "", style: str = "dim", flat: bool = True) -> None:
        """A note on stderr, never cut: on a terminal it wraps at word boundaries to the width,
        to a pipe it stays one whole line. `flat` makes any run of whitespace one space (a
        table-like line keeps its spacing with `flat=False`)."""
        self._close_answer()
        self._print_note(text, agent=agent, style=style, flat=flat)

    def _print_note(self, text: str, *, agent: str = "", style: str = "dim",
                    flat: bool = True) -> None:
        prefix = f"[{agent}] " if agent else ""
        text = inert(text)  # before rich's Text drops a bell or backspace unseen
        self.activity.print(Text(prefix + (" ".join(text.split()) if flat else text),
                                 style=style))

    def finish(self) -> None:
        """End the answer so the shell prompt starts on its own line."""
        self.activity.stop()
        self._close_reasoning()
        self.answer.end()

    def _retried(self, event: StatusEvent) -> None:
        """A model call broke off and is tried again (a retry, without streaming, on a fallback
        model): the unfinished part of the reply leaves the screen so the next attempt's reply
        starts on lines of its own, below one line saying so (on a terminal a short one; the
        whole message with --verbose or on a pipe). A retry that answers anew (a fallback, a
        different reply) drops what the broken one had shown."""
        discard = event.kind in REPLY_ANEW
        if not event.agent:  # (a sub-agent's prose is never shown)
            self.activity.stop()
            if discard:
                self._hidden_reasoning = 0
            self._close_reasoning()
            if not self._final_only:
                self.answer.suspend()
                if discard:
                    self.answer.discard()
            elif discard:
                self._held = ""
        line = _status_line(event.kind, event.message)
        if self._terminal and not self.activity.verbose:
            line = _one_line(f"↻ {_retry_summary(event) or line}", self._err.width)
        self._print_note(line, agent=event.agent)

    # -- pieces --

    def _diff(self, title: str, diff: str, agent: str) -> None:
        self.note(title, agent=agent, style="bold")
        lines = diff.rstrip("\n").split("\n")
        self._print_diff("\n".join(lines[:MAX_DIFF_LINES]))
        more = len(lines) - MAX_DIFF_LINES
        if more > 0:  # a generated file must not flood the screen
            self.note(f"… {more:,} more lines of this diff not shown (run --json prints it whole)",
                      agent=agent)

    def _print_diff(self, diff: str) -> None:
        self.activity.print(diff_renderable(diff, terminal=self._terminal))

    def _summary(self, result: RunResult) -> None:
        elapsed = time.monotonic() - self._started if self._started else 0.0
        turns = f"{result.turns} turn{'s' if result.turns != 1 else ''}"
        usage = usage_line(result.usage.to_dict(), cost=result.cost)
        self.note(f"{result.stop_reason} · {turns} · {elapsed:.1f}s · {usage}")

    def _write_reasoning(self, text: str) -> None:
        self.activity.stop()
        self._reasoning_open = True
        # made inert before rich's Text drops a bell or backspace unseen (as for every text
        # from outside here)
        self._err.print(Text(inert(text), style="dim italic"), end="", soft_wrap=True)

    def _close_answer(self) -> None:
        self._close_reasoning()
        if self.answer.markdown or (self.answer.line_open and _isatty(self._out)):
            self.answer.end()

    def _close_reasoning(self) -> None:
        if self._reasoning_open:
            self._err.print()
            self._reasoning_open = False
        if self._hidden_reasoning:
            chars, self._hidden_reasoning = self._hidden_reasoning, 0
            self.activity.reasoning(0)
            self.activity.print(Text(f"thought for {chars:,} chars of reasoning "
                                     f"({self._reasoning_hint} shows it)", style="dim italic"))


def diff_renderable(diff: str, *, terminal: bool) -> Any:
    """A unified diff to print: coloured and wrapped on a terminal, plain text elsewhere."""
    diff = inert(diff.rstrip("\n"))  # a file's text: shown as it is, a bell too
    if not terminal:
        return Text(diff)
    from rich.syntax import Syntax

    return Syntax(diff, "diff", theme="ansi_dark", background_color="default",
                  word_wrap=True)


def usage_line(usage: dict[str, Any], *, cost: float | None = None) -> str:
    """`1,234 in (1,000 cached) · 56 out · $0.0012` from a usage dict (cost when known)."""
    text = f"{usage.get('input_tokens', 0):,} in"
    cached = usage.get("cache_read_tokens", 0)
    if cached:
        text += f" ({cached:,} cached)"
    text += f" · {usage.get('output_tokens', 0):,} out"
    if cost is not None:
        text += f" · ${cost:.4f}" if cost < 1 else f" · ${cost:.2f}"
    return text


def _one_line(text: str, width: int) -> str:
    """`text` on one line of `width` columns (a wide character takes two), cut with "…"."""
    from rich.cells import cell_len, set_cell_size

    flat = " ".join(text.split())
    return flat if cell_len(flat) <= width else set_cell_size(flat, width - 1) + "…"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# statuses that say how the runtime coped, not what the agent did: shown with --verbose only
# (a small local model's text calls are read on every turn)
_DEBUGGING_KINDS = frozenset({"text_tool_calls"})


# statuses of a model call tried again (those of REPLY_ANEW start its reply anew)
_RETRY_KINDS = frozenset({"retrying", "credentials_refreshed", *REPLY_ANEW})


def _retry_summary(event: StatusEvent) -> str | None:
    """A retry's status said short, what happens first (the messages start with the cause,
    whose detail — a provider's error body — may be long)."""
    data = event.data
    if event.kind == "retrying" and data.get("fallback") == "non_streaming":
        return "the stream broke off; retrying without streaming"
    if event.kind == "retrying" and isinstance(data.get("delay"), int | float):
        cause = event.message.rsplit("; retrying in ", 1)[0]
        return f"retrying in {data['delay']:.1f}s: {cause}"
    if event.kind == "fallback" and data.get("to"):
        return f"continuing on {data['to']}: {data.get('from', 'the model')} failed"
    if event.kind == "discard_partial":
        return "the retried reply differs from the broken one; showing it whole"
    return None


def _status_line(kind: str, message: str) -> str:
    """`kind: message`, or the message alone where its first word says the kind already
    ("compacting 3 earlier messages…", not "compacting: compacting 3 earlier messages…")."""
    first = message.split(" ", 1)[0].lower()
    return message if first == kind.split("_", 1)[0] else f"{kind}: {message}"
