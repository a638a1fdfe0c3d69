"""The audit log of a session: one entry per tool call (arguments, result size, duration, error,
the gates' decision), read from its stored events; one form for both stores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopwright.store.rows import damaged


@dataclass(kw_only=True)
class AuditEntry:
    """One tool call as the audit log tells it."""

    run_id: str
    call_id: str
    name: str
    arguments: Any
    created: float
    is_error: bool | None = None  # None: the call never finished
    duration: float | None = None
    size: int | None = None  # characters of the result the model read
    decision: str = "allowed"  # "allowed" | "denied: <reason>" | "intercepted" | "not run"


def audit_entries(session_id: str, events: list[dict[str, Any]]) -> list[AuditEntry]:
    """The audit log (one entry per tool call) from a session's stored events; a tool event
    whose fields are not of their types is a damaged row (`rows.damaged`)."""
    entries: dict[tuple[str, str], AuditEntry] = {}
    for event in events:
        key = (event["run_id"], str(event.get("id", "")))
        if event["type"] == "tool_call":
            entries[key] = AuditEntry(run_id=event["run_id"], call_id=key[1],
                                      name=_field(session_id, event, "name", str) or "",
                                      arguments=event.get("arguments"), created=event["created"])
        elif event["type"] == "tool_result" and key in entries:
            entry = entries[key]
            entry.is_error = bool(_field(session_id, event, "is_error", bool))
            duration = _field(session_id, event, "duration", int | float)
            entry.duration = None if duration is None else float(duration)
            entry.size = _field(session_id, event, "content_chars", int)
            entry.decision = _decision(_field(session_id, event, "data", dict) or {})
    return list(entries.values())


def _field(session_id: str, event: dict[str, Any], name: str, kind: Any) -> Any:
    """`event[name]` when it is absent, null or of type `kind`; `damaged` otherwise."""
    value = event.get(name)
    if value is None or (isinstance(value, kind) and (kind is bool
                                                      or not isinstance(value, bool))):
        return value
    raise damaged(session_id, f"the {event['type']} event of call {str(event.get('id'))[:40]}",
                  ValueError(f"{name} holds {type(value).__name__}"))


def _decision(data: dict[str, Any]) -> str:
    if data.get("denied"):
        return f"denied: {data.get('reason') or 'not allowed'}"
    if data.get("intercepted"):
        return "intercepted"
    if data.get("unknown_tool") or data.get("bad_arguments") or data.get("truncated"):
        return "not run"
    return "allowed"
