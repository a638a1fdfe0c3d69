"""The iteration budget a run shares with every sub-agent it starts (it was `guards.py`; the
checks of a model's replies are the review stage, `loopwright.review`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from loopwright.notes import BUDGET_WARNING, render
from loopwright.settings import DEFAULTS

__all__ = ["IterationBudget"]


@dataclass
class IterationBudget:
    """Model calls a run may make, shared by the run and every sub-agent it starts."""

    total: int = DEFAULTS.iteration_budget
    used: int = 0
    warn_at: float = 0.7
    _warned: set[str] = field(default_factory=set, repr=False)  # runs already warned
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def consume(self, n: int = 1) -> bool:
        """Take `n` iterations; False when none were left."""
        with self._lock:
            if self.used >= self.total:
                return False
            self.used += n
            return True

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.used)

    def take_warning(self, run_id: str = "") -> str | None:
        """A note, once per run sharing the budget (a parent and each sub-agent), once `warn_at`
        of the budget is spent."""
        with self._lock:
            if run_id in self._warned or self.used < self.total * self.warn_at:
                return None
            self._warned.add(run_id)
        return render(BUDGET_WARNING, used=self.used, total=self.total, left=self.remaining)
