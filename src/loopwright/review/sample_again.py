"""A small model that repeats a call which just failed, with the same arguments, is asked once
more, sampling warmer, instead of the call running again.

With greedy decoding a small model given an error often writes the very call that failed, and
goes on writing it — copies in one reply, then one a reply — until the doom loop stops the run
with no answer (Qwen2.5-Coder-0.5B on the dev2 split: most of its failures; docs/benchmarks.md).
The same request decoded the same way gives the same reply, and a note after it is read as more
context to copy. So the reply is set aside (left out of every later request), its calls do not
run, and the same request is sent once more with the temperature raised and a fixed seed: a
different reply, and the same one on every run. Once per failing call in a run, charged to the
review budget; a warmer reply that repeats the call again meets the doom loop as before.

Structural: it reads the doom loop's record of the run's calls (what each last returned),
never the reply's words; without the doom loop in the run it does nothing."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import notes
from loopwright.messages import call_signature
from loopwright.review.check import Check
from loopwright.review.doom_loop import DoomLoop, DoomLoopGuard
from loopwright.review.verdicts import Verdict, sample_again, skip_call
from loopwright.review.view import ReviewView

# Qwen's own recommended sampling temperature; any seed will do, as long as it is fixed
WARMER = 0.7
SEED = 28


class SampleAgain(Check):
    """Once per failing call in a run, a reply whose first call repeats a call that failed
    (same tool, same arguments) is set aside and asked for again, warmer (module docstring)."""

    name = "sample_again"
    stage = "calls"
    small_models_only = True
    opt_in = True

    def __init__(self) -> None:
        self.guard: DoomLoopGuard | None = None
        self.asked: set[str] = set()  # the failing calls a warmer reply was asked for once

    def for_run(self) -> Check:
        return SampleAgain()

    def joined(self, checks: Sequence[Check]) -> None:
        self.guard = next((c.guard for c in checks if isinstance(c, DoomLoop)), None)

    async def review(self, view: ReviewView) -> list[Verdict]:
        if self.guard is None or not view.calls or view.tools_off or view.budget_left <= 0:
            return []
        first = view.calls[0]
        outcome = self.guard.last_outcome(first)
        signature = call_signature(first)
        if outcome is None or outcome[0] or signature in self.asked:
            return []
        self.asked.add(signature)
        skipped = notes.text(notes.NOT_RUN_SAMPLED_AGAIN)
        return [*(skip_call(c.id, skipped, f"{c.name}: not run; the reply is asked for again")
                  for c in view.calls),
                sample_again(f"{first.name}: the call that failed, with the same arguments; "
                             f"asked again at temperature {WARMER}",
                             temperature=WARMER, seed=SEED + len(self.asked))]
