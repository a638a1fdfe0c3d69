"""After a failed call, a reply with no call: sent back once, restating the request.

Structural: it reads whether the results just before the reply hold an error and whether the
reply made a call, never the reply's words. Small local models end their turn right after a
tool error with a promise and no call (Qwen2.5-Coder-1.5B, 8 of its 11 failures on the dev2
split: docs/benchmarks.md); the run then ends with no answer. A good answer after an error
(the file is missing, so the figure is unknown) is sent back too, once: the model may give it
again, and then it stands. So it is for small local models only: under `review = "auto"` it
runs only for a profile that says so (`Profile.small_local`: Qwen, Llama, …), never for a
frontier model nor an unknown name (`Check.small_models_only`)."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import notes
from loopwright.messages import Message
from loopwright.review.check import Check
from loopwright.review.fallback import not_run, preview
from loopwright.review.verdicts import Verdict, send_back
from loopwright.review.view import ReviewView


class AfterError(Check):
    """Sends back, once per run, an answer that follows a tool error directly."""

    name = "after_error"
    small_models_only = True
    opt_in = True

    def __init__(self) -> None:
        self.sent = False  # this run's one send-back was given

    def for_run(self) -> Check:
        return AfterError()

    async def review(self, view: ReviewView) -> Verdict | None:
        if self.sent or view.tools_off or not view.tools:
            return None
        failed = last_failed_result(view.history)
        if failed is None:
            return None
        self.sent = True
        note = notes.render(notes.AFTER_ERROR, tool=failed.name or "a tool",
                            error=preview(failed.content), request=notes.restated(view.request))
        return send_back(note, f"the reply after {failed.name or 'a tool'}'s error made no call")


def last_failed_result(history: Sequence[Message]) -> Message | None:
    """The failed result among the tool results just before the reply (the last message), or
    None when the latest results all succeeded or no tool ran. The runtime's own notes (a call
    it did not run, a note between the results and the reply) are not failed results."""
    for message in reversed(history[:-1]):
        if message.role == "tool":
            # a call the review stage held back ("Not run: …") did not fail: the note says why
            if message.is_error and not not_run(message):
                return message
            continue
        if message.role == "user" and notes.is_runtime_note(message):
            continue
        break
    return None
