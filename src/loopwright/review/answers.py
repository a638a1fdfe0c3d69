"""Checks of a final answer that is no answer: an imitation of the runtime's markup, an echo of
one of its notes, a copy of an earlier reply's preamble, a lead-in that stops at a colon. They
guess what a reply meant, so they are opt-in (`review = "all"` or named; never under "auto"):
written for small local models (Qwen2.5-Coder 0.5B/1.5B), they did not help them on the
held-out split (docs/benchmarks.md). None reads words of a language: they compare the reply
with the runtime's own markup and notes, with earlier replies, or look at its last character.

A small model's imitated note is kept in view (a `<system-reminder>` restating the tool's error
led the 1.5B to the right answer; with it set aside the 1.5B invented the weather); a made-up
result of a named tool and a copied preamble are set aside (shown its own made-up result or
copied preamble, greedy decoding writes it again)."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import notes
from loopwright.arguments import small_json_object
from loopwright.messages import Message
from loopwright.review.check import Check
from loopwright.review.fallback import is_dangling
from loopwright.review.verdicts import Verdict, send_back, set_aside
from loopwright.review.view import ReviewView
from loopwright.wire.text_calls.runtime_markup import made_up_result_of, strip_runtime_markup

_COPY_MIN_CHARS = 40  # a short answer given twice ("42") is an answer, not a copied preamble


class ImitatedMarkup(Check):
    """A reply that was nothing but the runtime's own markup (`<tool_response>`,
    `<system-reminder>`): Qwen2.5-Coder-1.5B answered with a made-up `<tool_response>` block."""

    name = "imitated_markup"
    reads_prose = True

    async def review(self, view: ReviewView) -> Verdict | None:
        raw = view.raw
        if "<" not in raw or strip_runtime_markup(raw) == raw or strip_runtime_markup(raw):
            return None
        tool = made_up_result_of(raw, view.tools)
        if tool is not None:
            return set_aside(notes.render(notes.MADE_UP_RESULT, tool=tool),
                             f"the reply made up a result of {tool}")
        return send_back(notes.text(notes.IMITATION), "the reply imitated the runtime's markup")


class EchoedNote(Check):
    """An answer that repeats a note the runtime wrote (any note in `loopwright.notes`)."""

    name = "echoed_note"
    reads_prose = True

    async def review(self, view: ReviewView) -> Verdict | None:
        if not notes.echoes_runtime_note(view.answer):
            return None
        return send_back(notes.text(notes.ECHO), "the answer repeated a runtime note")


class CopiedPreamble(Check):
    """An answer that is word for word the text of an earlier reply that called tools, or one of
    those calls' arguments objects (see `copies_call_preamble`)."""

    name = "copied_preamble"
    reads_prose = True

    async def review(self, view: ReviewView) -> Verdict | None:
        if not copies_call_preamble(view.answer, view.history):
            return None
        return set_aside(notes.text(notes.COPY), "the answer copied an earlier reply that "
                         "called tools")


class DanglingColon(Check):
    """A lead-in with nothing after it ("The result of this call would be:"): what followed was
    call markup, taken out of the visible text (0.5B model, asked to answer without tools)."""

    name = "dangling_colon"
    reads_prose = True

    async def review(self, view: ReviewView) -> Verdict | None:
        if not is_dangling(view.answer):
            return None
        return send_back(notes.text(notes.DANGLING), "the answer stopped at a colon")


def copies_call_preamble(answer: str, history: Sequence[Message]) -> bool:
    """Whether `answer` is word for word the text of an earlier reply that called tools — the
    preamble of those calls, not an answer to their results (Qwen2.5-Coder-1.5B, prompt mode,
    given package.json by read_file, wrote again the prose of the reply that had asked for it).
    The answer's own message, last in `history`, is not compared with itself. An answer that
    is one of those calls' arguments is a copy too, however short (the 0.5B, given notes.txt by
    `{"path": "notes.txt"}`, answered `{"path": "notes.txt"}`) — unless a tool returned that
    very object, or the request holds it, or the call it copies failed (a model that sent its
    answer to a tool that refused it, then answered with the same object, answered): then it
    may well be the answer (a correct `{"response": "1.0842"}` was set aside so)."""
    wanted = " ".join(answer.split())
    copied = small_json_object(wanted) or None  # `{}` is no copy
    if len(wanted) < _COPY_MIN_CHARS and copied is None:
        return False
    calls = [m for m in history[:-1] if m.role == "assistant" and m.tool_calls]
    if any(" ".join(m.content.split()) == wanted for m in calls):
        return True
    if copied is None or any(m.role in ("tool", "user") and small_json_object(m.content) == copied
                             for m in history):
        return False
    failed = {m.tool_call_id for m in history if m.role == "tool" and m.is_error}
    return any(small_json_object(c.arguments) == copied and c.id not in failed
               for m in calls for c in m.tool_calls)
