"""Asked to answer, a small model calls again: it is asked once more, with the result it has.

When a request asks for an answer without tools (the doom loop's "answer now") and the reply
makes only calls that already returned a result in this run, the doom loop would stop the run
with no answer. This check, before it in the table, gives a small local model one more request
(charged to the review budget) whose note names the call, gives its last result again and
restates the user's request: the request must differ from the last one, or greedy decoding
writes the same call (Qwen2.5-Coder-0.5B wrote `run_tests` again with the counts in hand: bench
dev2 split, docs/benchmarks.md). A second such reply is the doom loop's: the run stops.
Structural: it compares calls with earlier calls and their results, never the reply's words."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import notes
from loopwright.messages import Message, ToolCall, call_signature
from loopwright.review.check import Check
from loopwright.review.fallback import not_run, preview
from loopwright.review.verdicts import Verdict, answer_without_tools, skip_call
from loopwright.review.view import ReviewView


class AnswerAgain(Check):
    """Once a run: calls made when asked to answer, all with a result in hand, do not stop the
    run; the answer is asked for once more."""

    name = "answer_again"
    stage = "calls"
    small_models_only = True
    opt_in = True

    def __init__(self) -> None:
        self.asked = False

    def for_run(self) -> Check:
        return AnswerAgain()

    async def review(self, view: ReviewView) -> list[Verdict]:
        if self.asked or not view.tools_off or not view.calls or view.budget_left <= 0:
            return []
        results = last_results(view.history)
        known = [results.get(call_signature(c)) for c in view.calls]
        if any(r is None for r in known):  # a new call: the doom loop lets it run
            return []
        self.asked = True
        first = view.calls[0]
        again = notes.render(notes.ANSWER_FROM_RESULT, tool=first.name,
                             result=preview(known[0] or ""), request=notes.restated(view.request))
        skipped = notes.text(notes.NOT_RUN_ANSWER_ONLY)
        return [*(skip_call(c.id, skipped, f"{c.name}: called when asked to answer")
                  for c in view.calls),
                answer_without_tools("the model called a tool it has the result of when asked "
                                     "to answer; asked once more", note=again, extra_call=True)]


def last_results(history: Sequence[Message]) -> dict[str, str]:
    """For each call whose last run in `history` succeeded, that result, by call signature. A
    copy the runtime did not run leaves the result it had; a run that failed removes it."""
    calls: dict[str, ToolCall] = {}
    out: dict[str, str] = {}
    for message in history:
        for call in message.tool_calls if message.role == "assistant" else ():
            calls[call.id] = call
        if message.role == "tool" and message.tool_call_id in calls:
            signature = call_signature(calls[message.tool_call_id])
            if not_run(message):  # held back: the result it had stands
                continue
            if message.is_error:
                out.pop(signature, None)
            else:
                out[signature] = message.content
    return out
