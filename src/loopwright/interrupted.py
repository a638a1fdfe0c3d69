"""Calls a crash cut off: what a resumed run says of them. Each gets an error result, marked as
the runtime's (`INTERRUPTED_MARK`), which says what is known of its effect; a call made again
after it keeps its idempotency key (tools/idempotency.py)."""

from __future__ import annotations

from collections.abc import Callable

from loopwright.messages import Message, ToolCall

INTERRUPTED = "Error: this tool call was interrupted: the run stopped before it returned."
"""How every note for an interrupted call begins (the one home of that text)."""
INTERRUPTED_RESULT = (f"{INTERRUPTED} It may or may not have taken effect: check whether it did "
                      "before repeating it.")
"""The note for an interrupted call whose effect nobody recorded (`bash`, most tools)."""
INTERRUPTED_MARK = "interrupted"
"""The `Message.marks` entry of the note for an interrupted call: what makes it one. Its text
alone does not, as a tool's (or an MCP server's) own error can read the same."""


def is_interrupted_result(message: Message) -> bool:
    """Whether `message` is the note a resumed run gave a call cut off by a crash (a note
    stored before it was marked is not: it reads like any failed call's result)."""
    return INTERRUPTED_MARK in message.marks and message.role == "tool"


def unanswered_calls(history: list[Message]) -> list[ToolCall]:
    """The tool calls of `history` that have no result among the tool results right after their
    reply (a crash cut them off): those `close_interrupted_calls` gives a note. A result of an
    earlier call with the same id (a server that numbers every turn's calls from `call_0`)
    answers only that call."""
    cut: list[ToolCall] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()
    for msg in history:
        if msg.role == "tool":
            answered.add(msg.tool_call_id or "")
            continue
        cut += [call for call in pending if call.id not in answered]
        pending = list(msg.tool_calls) if msg.role == "assistant" else []
        answered = set()
    return cut + [call for call in pending if call.id not in answered]


def close_interrupted_calls(history: list[Message],
                            note_for: Callable[[ToolCall], str] | None = None,
                            marks: frozenset[str] = frozenset()) -> list[Message]:
    """Give every tool call without a result an error result (used when resuming a crashed run):
    `note_for(call)` (default: `INTERRUPTED_RESULT`), which says what is known of its effect,
    marked `INTERRUPTED_MARK` and `marks` (the scope of its idempotency key)."""
    out: list[Message] = []
    note_marks = marks | {INTERRUPTED_MARK}
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def flush() -> None:
        for call in pending:
            if call.id not in answered:
                note = note_for(call) if note_for is not None else INTERRUPTED_RESULT
                out.append(Message(role="tool", content=note, tool_call_id=call.id,
                                   name=call.name, is_error=True,
                                   marks=note_marks))
        pending.clear()
        answered.clear()

    for msg in history:
        if msg.role == "tool":
            if msg.tool_call_id:
                answered.add(msg.tool_call_id)
            out.append(msg)
            continue
        flush()
        out.append(msg)
        if msg.role == "assistant" and msg.tool_calls:
            pending.extend(msg.tool_calls)
    flush()
    return out
