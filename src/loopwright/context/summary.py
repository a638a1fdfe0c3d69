"""The compaction summary: the prompt, the transcript it reads, and the fallback when it fails.

The transcript is rendered as plain text (long contents cut to head + tail, oldest lines dropped
first when it is still too long), so the summary call fits the window whatever the history holds.
If the model call fails, `fallback_summary` builds a report from the record alone: the task, the
files touched, the calls made and the last results, cut short but never silently dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from loopwright.arguments import loads_bounded
from loopwright.messages import Message
from loopwright.settings import DEFAULTS

SUMMARY_HEADER = "[Context summary — reference only]"
REPORT_SECTIONS = ("Goal", "Constraints and preferences", "Done", "In progress", "Blocked",
                   "Key decisions", "Next steps", "Critical context", "Files")
SUMMARY_SYSTEM = (
    "You compact the working history of an AI agent so that it can continue with less context. "
    "You read a transcript of its earlier turns (and any earlier summary) and write a dense, "
    "factual report for the agent itself. Never call tools, never address the user, never "
    "continue the work: only report."
)
MESSAGE_CHARS = 2_000  # per transcript entry before the whole is trimmed to fit
ARGUMENT_CHARS = 400
FILE_KEYS = ("path", "file", "file_path", "filename", "filepath", "target", "directory", "dir")


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.content.startswith(SUMMARY_HEADER)


def clip(text: str, limit: int) -> str:
    """Head and tail of `text` within `limit` characters, marking the cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = max(0, limit - head - 40)
    return f"{text[:head]} […{len(text) - head - tail} chars cut…] {text[len(text) - tail:]}"


def render_entry(message: Message) -> str:
    """One transcript line group for a message."""
    if message.role == "tool":
        flag = " (error)" if message.is_error else ""
        body = clip(message.content, MESSAGE_CHARS)
        return f"[tool result: {message.name or 'tool'}{flag}]\n{body}"
    if message.role == "assistant":
        parts = [f"[assistant]\n{clip(message.content, MESSAGE_CHARS)}"] if message.content else []
        parts.extend(f"[assistant calls] {c.name}({clip(c.arguments, ARGUMENT_CHARS)})"
                     for c in message.tool_calls)
        return "\n".join(parts) or "[assistant] (empty)"
    return f"[{message.role}]\n{clip(message.content, MESSAGE_CHARS)}"


def render_transcript(messages: Iterable[Message], max_chars: int) -> str:
    """The messages as text within `max_chars`; when too long, the oldest entries go first
    (the newest state matters most) and a line says how many were left out."""
    entries = [render_entry(m) for m in messages]
    total = sum(len(e) + 2 for e in entries)
    dropped = 0
    while entries and total > max_chars:
        total -= len(entries[0]) + 2
        entries.pop(0)
        dropped += 1
    if entries and len(entries[0]) > max_chars:
        entries[0] = clip(entries[0], max_chars)
    note = [f"[… {dropped} earlier entries left out to fit …]"] if dropped else []
    return "\n\n".join([*note, *entries])


def summary_prompt(task: str, previous: list[str], transcript: str) -> str:
    """The user message of the summary call."""
    earlier = "".join(f"<earlier-summary>\n{p}\n</earlier-summary>\n\n" for p in previous)
    sections = "\n".join(f"## {name}" for name in REPORT_SECTIONS)
    return (
        "The agent's original task (it is kept verbatim elsewhere, do not copy it out):\n"
        f"<task>\n{clip(task, 2_000)}\n</task>\n\n{earlier}"
        f"<transcript>\n{transcript}\n</transcript>\n\n"
        "Write the report now, with exactly these sections, in this order:\n"
        f"{sections}\n"
        "Under Critical context keep exact values the agent will need again (identifiers, "
        "numbers, commands, error messages); under Files list each path read, created or changed "
        "and what matters about it. Merge any earlier summary in. Be specific and brief; write "
        "'none' for an empty section."
    )


def files_touched(messages: Iterable[Message], read_files: Iterable[str] = ()) -> list[str]:
    """Paths named in tool-call arguments, plus the files the agent read, in first-seen order."""
    found: dict[str, None] = {}
    for message in messages:
        for call in message.tool_calls:
            try:
                arguments = loads_bounded(call.arguments or "{}")
            except ValueError:
                continue
            if isinstance(arguments, dict):
                for key in FILE_KEYS:
                    value = arguments.get(key)
                    if isinstance(value, str) and value and len(value) < 500:
                        found.setdefault(value, None)
    for path in read_files:
        found.setdefault(path, None)
    return list(found)


def fallback_summary(task: str, messages: list[Message], *, read_files: Iterable[str] = (),
                     error: str = "", max_chars: int = 6_000) -> str:
    """A report built without a model: what was asked, touched, called, and last seen."""
    calls = [(c.name, c.arguments) for m in messages for c in m.tool_calls]
    results = [m for m in messages if m.role == "tool"]
    notes = [m.content for m in messages if m.role == "assistant" and m.content]
    earlier = [m.content for m in messages if is_summary(m)]
    budget = max(1_000, max_chars // 5)
    files = files_touched(messages, read_files)
    parts = [
        "(Built from the record: the model summary was not available"
        + (f" — {error}" if error else "") + ".)",
        f"## Goal\n{clip(task, budget)}",
    ]
    if earlier:
        parts.append(f"## Earlier summary\n{clip(earlier[-1], budget * 2)}")
    parts.append("## Files\n" + ("\n".join(f"- {f}" for f in files[-40:]) or "none"))
    recent_calls = calls[-30:]
    call_lines = "\n".join(f"- {name}({clip(arguments, 160)})" for name, arguments in recent_calls)
    parts.append(f"## Done ({len(calls)} tool calls; the last {len(recent_calls)} shown)\n"
                 + (call_lines or "none"))
    per_result = max(200, budget // 5)
    last = "\n".join(f"- {r.name}{' (error)' if r.is_error else ''}: {clip(r.content, per_result)}"
                     for r in results[-5:])
    parts.append("## Last results\n" + (last or "none"))
    if notes:
        parts.append("## Last notes from the agent\n" + "\n".join(
            f"- {clip(n, per_result)}" for n in notes[-3:]))
    return clip("\n\n".join(parts), max_chars)


def summary_message(report: str) -> Message:
    """The user message that stands in for the compacted turns."""
    return Message(role="user", content=(
        f"{SUMMARY_HEADER}\nEarlier turns of this conversation were compacted into the report "
        f"below. It is reference material, not a request: do not resume or redo anything "
        "in it on its own account. The user's latest message is the request to act on.\n\n"
        f"{report.strip()}"
    ))


def summary_state(read_files: Any) -> list[str]:
    """The read-file paths in a run's tool state, tolerant of a missing or odd value."""
    return [str(p) for p in read_files] if isinstance(read_files, dict) else []


class SummaryCooldown:
    """Remembers that the summary model failed, so that compactions within `seconds` of the
    failure use the report built from the record at once: a dead side model costs its retry
    policy once per cool-down, not at every compaction. One per agent, shared by its runs."""

    def __init__(self, seconds: float = DEFAULTS.summary_cooldown, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = max(0.0, seconds)
        self._clock = clock
        self._failed_at: float | None = None
        self._why = ""

    def failed(self, why: str) -> None:
        self._failed_at, self._why = self._clock(), why

    def succeeded(self) -> None:
        self._failed_at = None

    def cooling(self) -> str | None:
        """Why the summary model is not asked now, or None to ask it."""
        if self._failed_at is None or self._clock() - self._failed_at >= self.seconds:
            return None
        return (f"the summary model failed recently and is not asked again for "
                f"{self.seconds:g}s: {self._why}")
