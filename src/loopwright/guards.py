"""Guards that keep a run healthy: the doom-loop detector, the per-reply call screen (copies,
limit) and the shared iteration budget."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from loopwright.config import DEFAULTS
from loopwright.messages import ToolCall
from loopwright.tools.arguments import loads_bounded


def call_signature(call: ToolCall) -> str:
    """Name plus canonical arguments, so `{"a":1,"b":2}` and `{"b": 2, "a": 1}` are one call."""
    try:
        canonical = json.dumps(loads_bounded(call.arguments or "{}"), sort_keys=True)
    except ValueError:
        canonical = call.arguments.strip()
    return f"{call.name}\x00{canonical}"


@dataclass
class DoomLoopGuard:
    """Counts, for each distinct call, the consecutive replies that make it again. In the reply
    where the count reaches `threshold` the call is intercepted with guidance; if the very next
    reply makes it once more, the run stops. Copies within one reply count once (see
    `screen_reply`), so the run never stops before the model has read the warning."""

    threshold: int = 3
    _streaks: dict[str, int] = field(default_factory=dict)

    def check_reply(self, calls: Sequence[ToolCall]) -> dict[str, str]:
        """'ok', 'intercept' or 'stop' for each call id of one reply (its distinct calls)."""
        streaks: dict[str, int] = {}
        verdicts: dict[str, str] = {}
        for call in calls:
            signature = call_signature(call)
            count = streaks[signature] = self._streaks.get(signature, 0) + 1
            if self.threshold <= 0 or count < self.threshold:
                verdicts[call.id] = "ok"
            else:
                verdicts[call.id] = "intercept" if count == self.threshold else "stop"
        self._streaks = streaks
        return verdicts

    def guidance(self, call: ToolCall) -> str:
        count = self._streaks.get(call_signature(call), self.threshold)
        return (
            f"Error: you have called {call.name!r} with the same arguments {count} times in "
            "a row; the result will not change, so it was not run again. Use what you already "
            "have, try a different approach, or give your answer. Repeating this call once more "
            "will stop the run."
        )


@dataclass(kw_only=True)
class ReplyScreen:
    """Calls of one reply that will not run, by call id, with the result the model reads."""

    duplicates: dict[str, str] = field(default_factory=dict)
    over_limit: dict[str, str] = field(default_factory=dict)

    @property
    def blocked(self) -> dict[str, str]:
        return {**self.duplicates, **self.over_limit}


def screen_reply(calls: Sequence[ToolCall], *, limit: int) -> ReplyScreen:
    """Copies of an earlier identical call in the same reply run once (the copies are answered
    "duplicate of call N"); past `limit` distinct calls (0 = no limit) the rest are not run."""
    screen = ReplyScreen()
    first_of: dict[str, int] = {}
    distinct = 0
    for n, call in enumerate(calls, 1):
        signature = call_signature(call)
        first = first_of.get(signature)
        if first is not None:
            screen.duplicates[call.id] = (
                f"Not run: duplicate of call {first} in this reply (same tool, same arguments); "
                "its result is the one above.")
            continue
        first_of[signature] = n
        distinct += 1
        if 0 < limit < distinct:
            screen.over_limit[call.id] = (
                f"Error: not run: this reply asked for {len(calls)} tool calls and at most "
                f"{limit} calls run per reply. Ask again in your next reply for what you still "
                "need.")
    return screen


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
