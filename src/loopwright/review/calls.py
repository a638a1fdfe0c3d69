"""Structural checks of one reply's calls: copies of a call in the same reply, and the
per-reply limit."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import notes
from loopwright.messages import ToolCall, call_signature
from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, skip_call
from loopwright.review.view import ReviewView


def copied_signatures(calls: Sequence[ToolCall]) -> set[str]:
    """The signatures written more than once in one reply."""
    if len(calls) < 2:  # the common reply: one call, no signature to compute
        return set()
    seen: set[str] = set()
    copied: set[str] = set()
    for call in calls:
        signature = call_signature(call)
        (copied if signature in seen else seen).add(signature)
    return copied


class DuplicateCalls(Check):
    """Copies of an earlier identical call in the same reply run once; the copies are answered
    "duplicate of call N"."""

    name = "duplicate_calls"
    stage = "calls"

    async def review(self, view: ReviewView) -> list[Verdict]:
        if len(view.calls) < 2:
            return []
        first_of: dict[str, int] = {}
        out = []
        for n, call in enumerate(view.calls, 1):
            signature = call_signature(call)
            first = first_of.setdefault(signature, n)
            if first != n:
                out.append(skip_call(call.id, notes.render(notes.DUPLICATE, first=first),
                                     f"{call.name}: a copy of call {first} in the same reply"))
        return out


class CallLimit(Check):
    """Past `limit` distinct calls in one reply (0: no limit) the rest do not run."""

    name = "call_limit"
    stage = "calls"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    async def review(self, view: ReviewView) -> list[Verdict]:
        if self.limit <= 0 or len(view.calls) <= self.limit:
            return []
        note = notes.render(notes.OVER_LIMIT, count=len(view.reply_calls), limit=self.limit)
        return [skip_call(call.id, note, f"over the per-reply limit of {self.limit}")
                for call in view.calls[self.limit:]]
