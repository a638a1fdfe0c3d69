"""The review stage of one run: the active checks (each its own object for the run), and the one
budget of extra model calls they may cause."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from loopwright.messages import ToolCall
from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict
from loopwright.review.view import ReviewView


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewPlan:
    """What an agent's settings and the model's profile decided: the checks that run, in order,
    the budget, and whether prose-reading checks are on (the final fallback reads it too)."""

    checks: tuple[Check, ...] = ()
    budget: int = 0
    prose: bool = False


class ReviewStage:
    """One run's review: `review_calls` before a reply's calls run, `review_answer` before an
    answer is final. The loop applies the verdicts (`loop._apply_review`) and spends the budget
    through `spend`."""

    def __init__(self, plan: ReviewPlan) -> None:
        self.plan = plan
        self.checks = [check.for_run() for check in plan.checks]
        for check in self.checks:
            check.joined(self.checks)
        # split once per run: every reply walks one of them
        self.call_checks = [check for check in self.checks if check.stage == "calls"]
        self.answer_checks = [check for check in self.checks if check.stage == "answer"]
        # the call checks that keep a record of what ran: `ran` is called for every result
        self._recording = [check for check in self.call_checks if _records(check)]
        self.budget_left = plan.budget

    @property
    def reviews_answers(self) -> bool:
        """Whether `review_answer` may run a check (else its view need not be built)."""
        return bool(self.answer_checks) and self.budget_left > 0

    async def review_calls(self, view: ReviewView) -> list[Verdict]:
        """Every verdict on the reply's calls, in table order."""
        out: list[Verdict] = []
        stopped: set[str] = set()
        for index, check in enumerate(self.call_checks):
            if stopped:  # a narrower view only once an earlier check stopped a call
                view = dataclasses.replace(
                    view, calls=[c for c in view.calls if c.id not in stopped])
            found = await check.review(view)
            if not found:  # what a check says of most replies
                continue
            for verdict in _as_list(found):
                if verdict.kind == "skip_call" and verdict.call_id:
                    stopped.add(verdict.call_id)
                    self._answered_instead(view.calls, verdict, before=index)
                out.append(dataclasses.replace(verdict, check=check.name))
        return out

    def _answered_instead(self, calls: Sequence[ToolCall], verdict: Verdict, *,
                          before: int) -> None:
        """A call the recording checks earlier in the table let through is answered with a
        later check's note (a bad argument, an unknown tool): to them that note is the call's
        error result, as it was when the executor refused such calls (the doom loop counts a
        call that keeps failing the same way)."""
        earlier = [c for c in self._recording if self.call_checks.index(c) < before]
        if not earlier:
            return
        for call in calls:
            if call.id == verdict.call_id:
                for check in earlier:
                    check.ran(call, verdict.note, is_error=True)
                return

    async def review_answer(self, view: ReviewView) -> Verdict | None:
        """The first check's verdict that is not accept, or None. With the budget spent no
        check runs: each non-accept answer verdict costs a model call."""
        if self.budget_left <= 0:
            return None
        for check in self.answer_checks:
            for verdict in _as_list(await check.review(view)):
                return dataclasses.replace(verdict, check=check.name)
        return None

    def spend(self, verdict: Verdict) -> bool:
        """Charge a verdict to the budget; False when it costs a call and none is left."""
        if not verdict.costly:
            return True
        if self.budget_left <= 0:
            return False
        self.budget_left -= 1
        return True

    def ran(self, call: ToolCall, content: str, *, is_error: bool) -> None:
        for check in self._recording:
            check.ran(call, content, is_error=is_error)


def _records(check: Check) -> bool:
    """Whether `check` has its own `ran` (on its class, or set on the object)."""
    return type(check).ran is not Check.ran or "ran" in getattr(check, "__dict__", ())


def _as_list(found: Verdict | Sequence[Verdict] | None) -> list[Verdict]:
    if not found:  # None or no verdicts: what a check says of most replies
        return []
    items = [found] if isinstance(found, Verdict) else list(found)
    return [v for v in items if v.kind != "accept"]
