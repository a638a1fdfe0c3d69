"""Before the doom loop stops a run with no answer, a small model is asked once for one.

The doom loop stops a run in two places: a reply asked to answer without tools that makes a call
it already has the result of, and a call that failed in each of the last `threshold` replies
made once more after the warning. This check, before it in the table, gives a small local
model one request for an answer instead (charged to the review budget), whose note names the
call, gives its last result or error and restates the user's request: the request must differ
from the last one, or greedy decoding writes the same call (Qwen2.5-Coder-0.5B wrote `run_tests`
again with the counts in hand, and copied a failing `get_build_status` call until the run
stopped: bench dev2 split, docs/benchmarks.md). A call there ends the run, as before.
Structural: it reads the doom loop's own record of the run's calls (how many replies in a row
made each, and what each last returned), never the reply's words; without the doom loop in the
run there is no stop to head off, and it does nothing."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import notes
from loopwright.review.check import Check
from loopwright.review.doom_loop import DoomLoop, DoomLoopGuard
from loopwright.review.fallback import preview
from loopwright.review.verdicts import Verdict, answer_without_tools, skip_call
from loopwright.review.view import ReviewView


class AnswerAgain(Check):
    """Once a run, a small model's repeated calls do not stop the run before it was asked for
    an answer with what it has: calls made when asked to answer that all have a result in
    hand, or a call that failed in each of the doom loop's last `threshold` replies and is made
    once more (the doom loop's two stops, read from the doom loop's own counts)."""

    name = "answer_again"
    stage = "calls"
    small_models_only = True
    opt_in = True

    def __init__(self) -> None:
        self.guard: DoomLoopGuard | None = None
        self.asked = False

    def for_run(self) -> Check:
        return AnswerAgain()

    def joined(self, checks: Sequence[Check]) -> None:
        self.guard = next((c.guard for c in checks if isinstance(c, DoomLoop)), None)

    async def review(self, view: ReviewView) -> list[Verdict]:
        guard = self.guard
        if guard is None or self.asked or not view.calls or view.budget_left <= 0 \
                or guard.threshold <= 0:
            return []
        known = [guard.last_outcome(c) for c in view.calls]
        if any(k is None for k in known):  # a new call: the doom loop lets it run
            return []
        first = known[0] or (True, "")
        if view.tools_off and all(ok for ok, _ in filter(None, known)):
            note = notes.render(notes.ANSWER_FROM_RESULT, tool=view.calls[0].name,
                                result=preview(first[1]), request=notes.restated(view.request))
            reason = "the model called a tool it has the result of when asked to answer"
        elif not view.tools_off and not any(ok for ok, _ in filter(None, known)) and all(
                guard.streak(c) >= guard.threshold for c in view.calls):
            note = notes.render(notes.ANSWER_AFTER_FAILURES, tool=view.calls[0].name,
                                count=guard.threshold + 1, error=preview(first[1]),
                                request=notes.restated(view.request))
            reason = "the model made a failing call once more after the doom loop's warning"
        else:
            return []
        self.asked = True
        skipped = notes.text(notes.NOT_RUN_ANSWER_ONLY)
        return [*(skip_call(c.id, skipped, f"{c.name}: not run; an answer is asked for")
                  for c in view.calls),
                answer_without_tools(f"{reason}; asked once more for an answer", note=note,
                                     extra_call=True)]
