"""Typed run events: frozen, keyword-only dataclasses unioned in one place, serialised once.

Per turn they come in this order: `turn_start`, `text_delta` / `reasoning_delta`, `model_call`
(the call's record, once the reply is in), `tool_call`, `tool_result`, `status` (any time),
`turn_end`; then one terminal event: `done`, `error` or
`cancelled`. `agent` is empty for the top-level run and the child's id for forwarded sub-agent
events.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from loopwright.messages import Usage

if TYPE_CHECKING:
    from loopwright.result import RunResult

StatusKind = Literal[
    # model calls
    "retrying", "discard_partial", "fallback", "credentials_refreshed", "history_repaired",
    "refused", "auto_continue", "context_window",
    # tool calls (what the review stage decides is a `review` event, not a status)
    "text_tool_calls", "runtime_markup", "fallback_answer", "approval", "approval_required",
    "approval_expired", "policy", "hook_error", "turn_diff", "workspace_scan", "mcp",
    "mcp_restart",
    # context
    "pruned", "compacting", "compacted", "context_over", "context_trimmed", "recall",
    # run
    "steering", "budget_warning", "budget_exhausted", "grading", "plugin_error", "output_retry",
    "usage_limit",
    # memory, model routing, skills, sessions
    "memory_learned", "model_switch", "model_suggested", "routed", "skill_loaded",
    "skill_skipped", "store_busy", "store_error", "store_ready",
    # a plugin's or a tool's own note (what it is goes in `data`)
    "custom",
]
"""Every `kind` a `status` event has (docs/events.md describes each; tests/test_docs.py checks
the two agree)."""


def _tagged(form: dict[str, Any], agent: str) -> dict[str, Any]:
    """An event's JSON form with its sub-agent's tag: the top-level run's events leave it out."""
    if agent:
        form["agent"] = agent
    return form


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCallRecord:
    """One model call as it happened, for audit, cost and tracing.

    `attempts` counts the HTTP requests made for the call across retries, the stream → plain
    fallback and provider fallbacks; `latency` is wall time from the call to its reply (or its
    failure). `request` describes what was sent (parameters, tool names, message count and the
    newest message; the whole conversation is in the session's messages), `response` what came
    back (finish reason, text, tool calls, reasoning size) — None when the call failed."""

    id: str
    purpose: str
    run_id: str
    session_id: str | None
    agent: str
    turn: int
    model: str  # the model that answered (or was tried last)
    provider: str  # who answered, as "provider-name model (mode)"
    endpoint: str  # its base URL
    mode: str
    started: float  # Unix time
    latency: float
    attempts: int
    streamed: bool
    request: dict[str, Any]
    response: dict[str, Any] | None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    error: str | None = None
    status: int | None = None  # the HTTP status of a failed call, when there was one

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form; `from_dict` reads it back."""
        return {
            "id": self.id, "purpose": self.purpose, "run_id": self.run_id,
            "session_id": self.session_id, "agent": self.agent, "turn": self.turn,
            "model": self.model, "provider": self.provider, "endpoint": self.endpoint,
            "mode": self.mode,
            "started": self.started, "latency": self.latency, "attempts": self.attempts,
            "streamed": self.streamed, "request": self.request, "response": self.response,
            "usage": self.usage.to_dict(), "cost": self.cost, "error": self.error,
            "status": self.status,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCallRecord:
        """A record from its JSON form (`to_dict`), each field checked against its type (an
        `event_reading.EventFormatError` names the first that is not); keys it does not know
        are left out."""
        from loopwright.event_reading import read_record

        return read_record(data)


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnStart:
    type: Literal["turn_start"] = "turn_start"
    turn: int
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "turn": self.turn}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    type: Literal["text_delta"] = "text_delta"
    text: str
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "text": self.text}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningDelta:
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "text": self.text}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class PartialOutput:
    """With `output_type=`, while streaming: the structured output so far, validated — an
    instance of the output type as soon as the JSON that arrived makes one (the last item of a
    list may still grow); `data` is that JSON. The JSON form carries `data` as `output`."""

    type: Literal["partial_output"] = "partial_output"
    output: Any
    data: Any = None
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        output = self.data if self.data is not None else self.output
        return _tagged({"type": self.type, "output": output}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallEvent:
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] | str
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "id": self.id, "name": self.name,
                        "arguments": self.arguments}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultEvent:
    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    content: str
    is_error: bool = False
    duration: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)  # e.g. {"denied": True, "reason": …}
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "id": self.id, "name": self.name,
                        "content": self.content, "is_error": self.is_error,
                        "duration": self.duration, "data": self.data}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class StatusEvent:
    """Something the user should know: retrying, falling back, compacting, steering, …"""

    type: Literal["status"] = "status"
    kind: StatusKind
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "kind": self.kind, "message": self.message,
                        "data": self.data}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewEvent:
    """A check of the review stage did not accept a reply: which check, its verdict
    (`send_back`, `set_aside`, `skip_call`, `answer_without_tools`, `stop`), why, and the
    review budget left. `applied` is False for a send-back the spent budget did not allow."""

    type: Literal["review"] = "review"
    check: str
    verdict: str
    reason: str = ""
    budget_left: int = 0
    call_id: str | None = None
    applied: bool = True
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "check": self.check, "verdict": self.verdict,
                        "reason": self.reason, "budget_left": self.budget_left,
                        "call_id": self.call_id, "applied": self.applied}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCallEvent:
    """One model call finished (or failed): its record. Turns, the budget summary, compaction
    summaries and grading all emit one (`record.purpose` says which)."""

    type: Literal["model_call"] = "model_call"
    record: ModelCallRecord
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        record = self.record.to_dict() if self.record is not None else None
        return _tagged({"type": self.type, "record": record}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnEnd:
    type: Literal["turn_end"] = "turn_end"
    turn: int
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None  # USD of this turn's model calls, when the price is known
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "turn": self.turn, "usage": self.usage,
                        "cost": self.cost}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class DoneEvent:
    type: Literal["done"] = "done"
    result: RunResult
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "result": _result_dict(self.result)}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorEvent:
    type: Literal["error"] = "error"
    message: str
    error_type: str = "error"
    result: RunResult | None = None
    agent: str = ""
    # the exception behind an unexpected failure (a bug in an adapter or a plugin), for
    # debugging; not part of the JSON form (its type and text are in `message`)
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "message": self.message,
                        "error_type": self.error_type,
                        "result": _result_dict(self.result)}, self.agent)


@dataclass(frozen=True, kw_only=True, slots=True)
class CancelledEvent:
    type: Literal["cancelled"] = "cancelled"
    result: RunResult | None = None
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (`event_to_dict`)."""
        return _tagged({"type": self.type, "result": _result_dict(self.result)}, self.agent)


Event = (
    TurnStart
    | TextDelta
    | ReasoningDelta
    | PartialOutput
    | ToolCallEvent
    | ToolResultEvent
    | StatusEvent
    | ReviewEvent
    | ModelCallEvent
    | TurnEnd
    | DoneEvent
    | ErrorEvent
    | CancelledEvent
)

_T = TypeVar("_T")


def maker(cls: type[_T]) -> type[_T]:
    """A function that makes a `cls` from the same keywords as `cls(...)`, to the same value, at
    about half the instructions: calling a class with keywords builds a dict of them for its
    `__init__`, and a frozen dataclass's `__init__` sets each field through
    `object.__setattr__`; this function is called without a dict and sets each slot through its
    own descriptor. For the frozen, slotted dataclasses made on every turn of a listened-to
    run: its events (a `model_call` record alone cost ~40 k instructions made by its class) and
    the store's writes (store/writes.py). Typed as the class, whose signature it has;
    tests/test_events.py checks each against its class."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (hasattr(cls, "__post_init__") or not all(f.init for f in fields)
            or "__slots__" not in vars(cls)):
        # what the class's own `__init__` would do that this function does not
        raise TypeError(f"maker({cls.__name__}): only slotted dataclasses whose every field is "
                        "set by __init__ and that have no __post_init__")
    params, lines = [], ["    made = new(cls)"]
    env: dict[str, Any] = {"new": object.__new__, "cls": cls, "MISSING": dataclasses.MISSING}
    for number, f in enumerate(fields):
        env[f"set_{number}"] = getattr(cls, f.name).__set__
        if f.default is not dataclasses.MISSING:
            env[f"default_{number}"] = f.default
            params.append(f"{f.name}=default_{number}")
            value = f.name
        elif f.default_factory is not dataclasses.MISSING:
            env[f"factory_{number}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            value = f"factory_{number}() if {f.name} is MISSING else {f.name}"
        else:
            params.append(f.name)
            value = f.name
        lines.append(f"    set_{number}(made, {value})")
    source = "\n".join([f"def make(*, {', '.join(params)}):", *lines, "    return made"])
    exec(source, env)  # as `dataclasses` makes an `__init__`: from the fields, once
    made: type[_T] = env["make"]
    return made


new_turn_start = maker(TurnStart)
new_turn_end = maker(TurnEnd)
new_tool_call = maker(ToolCallEvent)
new_tool_result = maker(ToolResultEvent)
new_model_call = maker(ModelCallEvent)
new_call_record = maker(ModelCallRecord)

TERMINAL_TYPES: frozenset[str] = frozenset({"done", "error", "cancelled"})
# the stops that end a run with `done` (cancelled: `cancelled`; every other: `error`)
_DONE_REASONS = frozenset({"completed", "max_turns", "budget_exhausted", "loop_detected",
                           "refused", "usage_limit"})


def terminal_event(result: RunResult, agent: str = "") -> DoneEvent | ErrorEvent | CancelledEvent:
    """The one event a run ends with, made from its result once every plugin's `on_run_end`
    has run: the loop emits it, and the session recorder (the last plugin) stores the same
    event in the run's last write."""
    reason = result.stop_reason
    if reason in _DONE_REASONS:
        return DoneEvent(result=result, agent=agent)
    if reason == "cancelled":
        return CancelledEvent(result=result, agent=agent)
    return ErrorEvent(message=result.error or "run failed", error_type=reason, result=result,
                      agent=agent, exception=result.exception)

BY_TYPE: dict[str, type[Any]] = {
    str(cls.__dataclass_fields__["type"].default): cls
    for cls in (
        TurnStart,
        TextDelta,
        ReasoningDelta,
        PartialOutput,
        ToolCallEvent,
        ToolResultEvent,
        StatusEvent,
        ReviewEvent,
        ModelCallEvent,
        TurnEnd,
        DoneEvent,
        ErrorEvent,
        CancelledEvent,
    )
}
"""Each event class by its `type` tag."""


def _result_dict(result: RunResult | None) -> dict[str, Any] | None:
    return result.to_dict() if result is not None else None


def event_to_dict(event: Event) -> dict[str, Any]:
    """The JSON form of an event (what `--json`, SSE and the store carry): every field but
    `exception`, `agent` only when set, a record or result as its own JSON form, and a
    `partial_output`'s JSON as `output`. Each type writes its own out (`to_dict`): a walk over
    the fields with `getattr` and the special cases tested on every field cost ~3 times as
    much, on every event of a listened-to run (the store makes a row of each);
    tests/test_events.py checks each against the fields of its class."""
    return event.to_dict()


def event_to_json(event: Event) -> str:
    """The event as one line of JSON, text written as it is (`ensure_ascii=False`); what goes to
    a terminal, a pipe or a browser is `event_line`'s."""
    return json.dumps(event_to_dict(event), ensure_ascii=False, default=str)


# What no terminal or encoding should get raw — C1 controls (U+009B is a CSI to a terminal that
# reads C1), lone surrogates (a provider may send "\ud800", and no encoding can write one) and the
# line separators JavaScript splits at — is written as a \uXXXX escape. Such a character can only
# stand inside a JSON string, so the line stays the same JSON.
_RAW_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def event_line(event: Event) -> str:
    """`event` as one line of JSON with nothing in it a terminal obeys or UTF-8 cannot encode."""
    return safe_json(event_to_json(event))


def safe_json(text: str) -> str:
    """JSON text (as `json.dumps(…, ensure_ascii=False)` writes it) with what a terminal obeys
    or UTF-8 cannot encode written as escapes: the same JSON."""
    if text.isascii():  # the common case, at C speed
        return text
    return _RAW_UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


REPLY_ANEW = frozenset({"fallback", "discard_partial"})
"""The statuses after which a model call's reply streams again from its start — a fallback
model's, or a retry's that differs from what broke off: what the broken one showed is not part
of it (the page's timeline.js keeps the same list)."""


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from its JSON form: a `--json` line's or SSE message's, or one the
    session store gives back (`store.events()`). Each field is checked against its type, and a
    result read as strictly as the store reads a sub-agent's: a form this version does not
    write (a line cut short or edited) raises `event_reading.EventFormatError` (a `ValueError`)
    naming the event and the field; an event type it does not know, `UnknownEventType` (one
    of those), which `event_reading.read_event_lines` skips with one warning."""
    from loopwright.event_reading import read_event

    return read_event(data)
