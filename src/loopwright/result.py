"""The outcome of one run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal

from typing_extensions import TypeVar

from loopwright.messages import Message, Usage

StopReason = Literal[
    "completed", "max_turns", "budget_exhausted", "loop_detected", "refused", "cancelled",
    "output_invalid", "usage_limit", "error",
]

OutputT = TypeVar("OutputT", default=str)


@dataclass(kw_only=True)
class RunResult(Generic[OutputT]):
    """What `Agent.run()` returns and the `done` event carries. `output` is the final text, or
    with `output_type=` the validated object (then `text` keeps the reply it came from)."""

    output: OutputT
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
    text: str = ""  # the final reply as written (the same as `output` without `output_type`)
    # the exception behind an `error` stop, for `raise_on_error`; not part of the JSON form
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        """The run completed (`stop_reason == "completed"`)."""
        return self.stop_reason == "completed"

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (the `done` event's `result`); `from_dict` reads it back."""
        from pydantic_core import to_jsonable_python  # 100 M instructions: not at import

        return {
            "output": self.output if isinstance(self.output, str)
            else to_jsonable_python(self.output),
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
            **({"text": self.text} if self.text != self.output else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult[Any]:
        """A result from its JSON form (`to_dict`); `output` stays as JSON gave it."""
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
            text=data.get("text", data["output"] if isinstance(data["output"], str) else ""),
        )


def raise_for_failure(result: RunResult[Any]) -> None:
    """Raise what ended a failed run (`error`, `output_invalid`): the typed error itself when
    loopwright raised one, else `RunFailed` with the result attached."""
    from loopwright.errors import LoopwrightError, RunFailed

    if result.stop_reason not in ("error", "output_invalid"):
        return
    if isinstance(result.exception, LoopwrightError):
        raise result.exception
    raise RunFailed(result.error or "the run failed", result) from result.exception


def raise_unless_answered(result: RunResult[Any]) -> None:
    """Raise unless the run completed with its answer (what `Agent.chat()` returns): a failed
    run as `raise_for_failure` does; another stop (`usage_limit`, `max_turns`, `cancelled`,
    `refused`, …) as its typed error when it has one (`UsageLimitExceeded`), else `RunFailed`
    with the result attached — its `output` is then no answer of the model's."""
    from loopwright.errors import LoopwrightError, RunFailed

    raise_for_failure(result)
    if result.stop_reason == "completed":
        return
    if isinstance(result.exception, LoopwrightError):
        raise result.exception
    detail = f": {result.error}" if result.error else ""
    raise RunFailed(f"the run ended ({result.stop_reason}) without an answer{detail}", result)
