"""Call markup written as text that could not be read: the model is shown the format, at most
`MAX_FORMAT_CORRECTIONS` times a run. Structural: it reads markup, not prose."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright.review import notes
from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, send_back
from loopwright.review.view import ReviewView

MAX_FORMAT_CORRECTIONS = 2


def format_correction(problems: Sequence[str]) -> str:
    """What the model reads after writing call markup that could not be read."""
    from loopwright.tools.text_calls import FORMAT_HINT

    return notes.render(notes.FORMAT_CORRECTION, problems="; ".join(problems[:3]),
                        hint=FORMAT_HINT)


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
