"""Stored rows back into objects, for both stores. A damaged row (JSON cut by a crash or a full
disk, a field of the wrong type, a row some other program wrote) is a `SessionError` naming the
session, the row and what to do — never a raw decoding error."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from loopwright.errors import SessionError
from loopwright.messages import Message

if TYPE_CHECKING:
    from loopwright.model_call import ModelCallRecord

_DECODING = (ValueError, TypeError, KeyError, AttributeError)  # json, from_dict on odd shapes


def damaged(session_id: str, row: str, exc: BaseException) -> SessionError:
    """The error for one damaged row of a session."""
    why = (str(exc) or type(exc).__name__)[:200]
    return SessionError(
        f"session {session_id}: {row} is damaged ({why}); the store holds a row cut short or "
        "not written by loopwright, so the session cannot be read as it is. Continue in a new "
        f"session, or delete this one with `loopwright sessions rm {session_id}`")


def message_at(session_id: str, seq: int, role: str, content: str, data: str) -> Message:
    """A stored message row (`seq`: its number in the session) back as a `Message`."""
    try:
        fields = json.loads(data) if data != "{}" else {}
        fields["role"] = role
        fields["content"] = content
        return Message.from_dict(fields)
    except _DECODING as exc:
        raise damaged(session_id, f"message {seq}", exc) from None


def event_at(session_id: str, run_id: str, created: float, data: str) -> dict[str, Any]:
    """A stored event row back as its dict, with `run_id` and `created` added."""
    try:
        event = json.loads(data)
        return {**event, "run_id": run_id, "created": created}
    except _DECODING as exc:
        raise damaged(session_id, f"an event of run {run_id}", exc) from None


def call_at(session_id: str, data: str) -> ModelCallRecord:
    """A stored `model_calls` row back as a `ModelCallRecord`."""
    from loopwright.model_call import ModelCallRecord  # the HTTP stack only when reading

    try:
        return ModelCallRecord.from_dict(json.loads(data))
    except _DECODING as exc:
        raise damaged(session_id, "a model call record", exc) from None
