"""The outcome of one run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.messages import Message, Usage

StopReason = Literal[
    "completed", "max_turns", "budget_exhausted", "loop_detected", "refused", "cancelled",
    "error",
]


@dataclass(kw_only=True)
class RunResult:
    """What `Agent.run()` returns and the `done` event carries."""

    output: str
    messages: list[Message]
    stop_reason: StopReason
    turns: int
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    session_id: str | None = None
    error: str | None = None
    diff: str = ""
    grade: dict[str, Any] | None = None
    side_usage: dict[str, Any] = field(default_factory=dict)
    """Side calls (compaction, grading, memory, …) by purpose: calls, models, usage, cost —
    included in `usage` and `cost` too, counted apart here."""

    @property
    def ok(self) -> bool:
        return self.stop_reason == "completed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "messages": [m.to_dict() for m in self.messages],
            "stop_reason": self.stop_reason,
            "turns": self.turns,
            "usage": self.usage.to_dict(),
            "cost": self.cost,
            "session_id": self.session_id,
            "error": self.error,
            "diff": self.diff,
            "grade": self.grade,
            "side_usage": self.side_usage,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        return cls(
            output=data["output"],
            messages=[Message.from_dict(m) for m in data.get("messages", [])],
            stop_reason=data["stop_reason"],
            turns=data["turns"],
            usage=Usage(**data.get("usage", {})),
            cost=data.get("cost"),
            session_id=data.get("session_id"),
            error=data.get("error"),
            diff=data.get("diff", ""),
            grade=data.get("grade"),
            side_usage=data.get("side_usage") or {},
        )
