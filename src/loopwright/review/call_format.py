"""Call markup written as text that could not be read: the model is shown the format, at most
`MAX_FORMAT_CORRECTIONS` times a run. Structural: it reads markup, not prose."""

from __future__ import annotations

from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, send_back
from loopwright.review.view import ReviewView
from loopwright.tools.prompt_format import MAX_FORMAT_CORRECTIONS, format_correction


class CallFormat(Check):
    """A reply whose only calls were unreadable markup is sent back with the format."""

    name = "call_format"

    def __init__(self) -> None:
        self.corrections = 0

    def for_run(self) -> Check:
        return CallFormat()

    async def review(self, view: ReviewView) -> Verdict | None:
        if not view.unreadable or self.corrections >= MAX_FORMAT_CORRECTIONS:
            return None
        self.corrections += 1
        return send_back(format_correction(view.unreadable),
                         "the reply held unreadable tool-call markup")
