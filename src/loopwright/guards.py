"""Guards that keep a run healthy: the doom-loop detector and the shared iteration budget."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from loopwright.messages import ToolCall


def call_signature(call: ToolCall) -> str:
    """Name plus canonical arguments, so `{"a":1,"b":2}` and `{"b": 2, "a": 1}` are one call."""
    try:
        canonical = json.dumps(json.loads(call.arguments or "{}"), sort_keys=True)
    except ValueError:
        canonical = call.arguments.strip()
    return f"{call.name}\x00{canonical}"


@dataclass
class DoomLoopGuard:
    """Counts identical consecutive calls. At `threshold` the call is intercepted with guidance;
    one more identical call after that stops the run."""

    threshold: int = 3
    _last: str | None = None
    _count: int = 0

    def check(self, call: ToolCall) -> str:
        """'ok', 'intercept' or 'stop' for the next call in order."""
        signature = call_signature(call)
        if signature == self._last:
            self._count += 1
        else:
            self._last, self._count = signature, 1
        if self.threshold <= 0 or self._count < self.threshold:
            return "ok"
        return "intercept" if self._count == self.threshold else "stop"

    def guidance(self, call: ToolCall) -> str:
        return (
            f"Error: you have called {call.name!r} with the same arguments {self._count} times in "
            "a row; the result will not change, so it was not run again. Use what you already "
            "have, try a different approach, or give your answer. Repeating this call once more "
            "will stop the run."
        )


@dataclass
class IterationBudget:
    """Model calls a run may make, shared by the run and every sub-agent it starts."""

    total: int = 90
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

    @property
    def exhausted(self) -> bool:
        return self.used >= self.total

    def take_warning(self, run_id: str = "") -> str | None:
        """A note, once per run sharing the budget (a parent and each sub-agent), once `warn_at`
        of the budget is spent."""
        with self._lock:
            if run_id in self._warned or self.used < self.total * self.warn_at:
                return None
            self._warned.add(run_id)
        return (
            f"[budget] {self.used} of {self.total} iterations used ({self.remaining} left). "
            "Start wrapping up: finish the most important remaining work and prepare your answer."
        )


LAST_ROUND_NOTE = (
    "This is your last round: do not call any more tools. Give your final answer now, based on "
    "what you have, and say briefly what remains undone, if anything."
)
BUDGET_SUMMARY_NOTE = (
    "The iteration budget for this task is exhausted. Do not call tools. Summarise the work done "
    "so far, what remains, and your best current answer."
)
CONTINUE_NOTE = (
    "Your reply was cut off by the output-token limit. Continue exactly where you stopped, "
    "without repeating anything."
)
