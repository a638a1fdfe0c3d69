"""What the user gets when a run ends without an answer from the model, and the history an
answer-only request shows."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence

from loopwright import notes
from loopwright.messages import Message

_FALLBACK_RESULTS = 4
_NOT_RUN_FRAGMENTS = ("was cut off by the output-token limit before its arguments",)
_RESULT_PREVIEW = 300  # characters of a result quoted back (to the model or the user)


def preview(text: str) -> str:
    """`text` on one line, cut at `_RESULT_PREVIEW` characters."""
    text = " ".join(text.split())
    return text if len(text) <= _RESULT_PREVIEW else text[:_RESULT_PREVIEW] + " …"


def is_dangling(text: str) -> bool:
    """Whether the text ends at a colon (ASCII or full-width), with nothing after it."""
    return text.rstrip().endswith((":", "："))


def is_answer(text: str, *, prose: bool = True) -> bool:
    """Whether a final text can be shown as the model's answer: not empty; with `prose` (the
    prose-reading checks are on for this model) also not a bare fragment of a cut call (`{"`,
    `{"name`), not an echo of the runtime's own notes or an imitation of its markup, not a
    lead-in stopping at a colon."""
    if not _says_something(text):
        return False
    if not prose:
        return True
    # only once a run ends: the text-call parser is not loaded by a run that never needs it
    from loopwright.wire.text_calls.registry import is_call_fragment
    from loopwright.wire.text_calls.runtime_markup import strip_runtime_markup

    return (_says_something(strip_runtime_markup(text))
            and not notes.echoes_runtime_note(text) and not is_call_fragment(text)
            and not is_dangling(text))


def _says_something(text: str) -> bool:
    """A letter, a digit or a symbol: "👍", "✅" and "∞" are answers; whitespace and punctuation
    alone (`{"`, "...") are not."""
    return any(ch.isalnum() or unicodedata.category(ch).startswith("S") for ch in text)


def fallback_answer(history: Sequence[Message], reason: str) -> str:
    """The last results the tools really returned (never our own notes), labelled as such —
    not an invented answer; when no tool returned anything, that said in words (1.5B
    `missing_file`, prompt mode: three made-up `<tool_response>` blocks and no call left the
    output ""). Starts with `notes.FALLBACK_HEAD`, so a benchmark can count it as failed."""
    calls = {c.id: c for m in history if m.role == "assistant" for c in m.tool_calls}
    lines: list[str] = []
    for msg in reversed(history):
        if msg.role != "tool" or not_run(msg):
            continue
        call = calls.get(msg.tool_call_id or "")
        name = call.name if call is not None else msg.name or "tool"
        arguments = preview(call.arguments) if call is not None and call.arguments else "{}"
        line = f"- {name} {arguments} → {'error: ' if msg.is_error else ''}{preview(msg.content)}"
        if line not in lines:
            lines.append(line)
        if len(lines) == _FALLBACK_RESULTS:
            break
    if not lines:
        return notes.render(notes.FALLBACK, reason=reason,
                            rest=", and no tool returned a result.")
    return notes.render(notes.FALLBACK, reason=reason, rest=". The last tool results it "
                        "received:\n" + "\n".join(reversed(lines)))


def not_run(result: Message) -> bool:
    """Whether a tool message is the runtime's note on a call it did not run."""
    return result.content.startswith(notes.RUNTIME_MARK) or any(
        f in result.content for f in _NOT_RUN_FRAGMENTS)


def without_unrun_calls(history: Sequence[Message]) -> list[Message]:
    """The history as an answer-only request shows it: calls the runtime did not run (copies,
    repeats, cut fragments) and their notes left out, so a small model looking at its own runaway
    replies is not primed to write them once more. Only for that request; never stored."""
    unrun = {m.tool_call_id for m in history if m.role == "tool" and not_run(m)}
    if not unrun:
        return list(history)
    out: list[Message] = []
    for msg in history:
        if msg.role == "tool" and msg.tool_call_id in unrun:
            continue
        if msg.role == "assistant" and msg.tool_calls:
            kept = [c for c in msg.tool_calls if c.id not in unrun]
            if not kept and not msg.content.strip():
                continue
            if len(kept) != len(msg.tool_calls):
                msg = dataclasses.replace(msg, tool_calls=kept)
        out.append(msg)
    return out
