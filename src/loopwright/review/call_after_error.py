"""After a failed call, a reply with no call: set aside, and the next reply begun as a call.

Structural: it reads whether the results just before the reply hold an error and whether the
reply made a call, never the reply's words. Qwen2.5-Coder-1.5B ends its turn right after a tool
error with a promise and no call ("I will retry the request.", "Let's try another city, such as
…") — the most common of its failures on the dev2 split (docs/benchmarks.md). Sent back with a
note (`after_error`) it wrote another promise. Here the reply is left out of later requests and
the next one is begun for the model with its chat template's call opening (`<tool_call>` and
`{"name": "` for Qwen2.5), which the server continues and reads as a native call: the model
chooses the tool and the arguments, never whether to call.

It needs a server that continues a reply it is given (llama.cpp's does) and a family whose call
opening is known (`Profile.call_opening`): otherwise it never fires. A good answer after an
error (the file is missing, so the figure is unknown) is set aside too, once per failed call:
the model then makes a call, reads its result and answers again. So it is for small local
models only (`Check.small_models_only`), and each firing is one extra model call charged to
`review_budget`."""

from __future__ import annotations

from loopwright.review.after_error import last_failed_result
from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, set_aside_for_call
from loopwright.review.view import ReviewView


class CallAfterError(Check):
    """Sets aside an answer that follows a tool error directly, and has the next reply begin
    as a call."""

    name = "call_after_error"
    small_models_only = True
    opt_in = True

    async def review(self, view: ReviewView) -> Verdict | None:
        if view.tools_off or not view.tools or view.budget_left <= 0:
            return None
        failed = last_failed_result(view.history)
        if failed is None:
            return None
        opening = await view.call_opening()
        if not opening:
            return None
        tool = failed.name or "a tool"
        return set_aside_for_call(opening, f"the reply after {tool}'s error made no call; the "
                                           "next reply is begun as a call")
