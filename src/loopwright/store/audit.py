"""The audit log of a session: one entry per tool call (arguments, result size, duration, error,
the gates' decision), read from its stored events; one form for both stores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


def audit_entries(events: list[dict[str, Any]]) -> list[AuditEntry]:
    """The audit log (one entry per tool call) from a session's stored events."""
    entries: dict[tuple[str, str], AuditEntry] = {}
    for event in events:
        key = (event["run_id"], str(event.get("id", "")))
        if event["type"] == "tool_call":
            entries[key] = AuditEntry(run_id=event["run_id"], call_id=key[1],
                                      name=event.get("name", ""),
                                      arguments=event.get("arguments"), created=event["created"])
        elif event["type"] == "tool_result" and key in entries:
            entry = entries[key]
            entry.is_error = bool(event.get("is_error"))
            entry.duration = event.get("duration")
            entry.size = event.get("content_chars")
            entry.decision = _decision(event.get("data") or {})
    return list(entries.values())


def _decision(data: dict[str, Any]) -> str:
    if data.get("denied"):
        return f"denied: {data.get('reason') or 'not allowed'}"
    if data.get("intercepted"):
        return "intercepted"
    if data.get("unknown_tool") or data.get("bad_arguments") or data.get("truncated"):
        return "not run"
    return "allowed"
