"""Model call records in the session store: where a `model_call` event's record is kept, and
the event as the log gives it back.

A run's `model_call` events reach the store through `record_events` like every other event.
PostgreSQL keeps the whole `ModelCallRecord` in `model_calls` (what is queried — purpose, model,
attempts, latency, tokens, cost, error — in columns of its own, the record as JSON in `data`) and
the event without the record's request and response in the log (`split_model_call`). SQLite
(schema v7) keeps the whole record in the event's own row, one B-tree a turn fewer, and gives
the event back without them (`slim_event`); its calls are the records that carry a request
(`full_records`: an event written before v7 was stored slim, its record moved to a row of its
own by the migration). Either way a reader sees the same events and the same records."""

from __future__ import annotations

from typing import Any

from loopwright.store.rows import record_json, storable_value

CALL_COLUMNS = ("run_id", "call_id", "turn", "purpose", "model", "provider", "started",
                "latency", "attempts", "input_tokens", "output_tokens", "cost", "error", "data")
_BULKY = ("request", "response")


def split_model_call(run_id: str, event: dict[str, Any]
                     ) -> tuple[dict[str, Any], tuple[Any, ...] | None]:
    """(the event as the log keeps it, its `model_calls` row in `CALL_COLUMNS` order, or None
    for any other event)."""
    record = event.get("record")
    if event.get("type") != "model_call" or not isinstance(record, dict):
        return event, None
    found = record.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    row = (run_id, str(record.get("id", "")), int(record.get("turn") or 0),
           str(record.get("purpose", "")), str(record.get("model", "")),
           str(record.get("provider", "")), float(record.get("started") or 0.0),
           float(record.get("latency") or 0.0), int(record.get("attempts") or 0),
           int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
           record.get("cost"), storable_value(record.get("error")),
           record_json(record))
    return slim_event(event), row


def slim_event(event: dict[str, Any]) -> dict[str, Any]:
    """The event as the log gives it back: a `model_call` event without its record's request
    and response (any other event as it is)."""
    record = event.get("record")
    if event.get("type") != "model_call" or not isinstance(record, dict):
        return event
    return {**event, "record": {k: v for k, v in record.items() if k not in _BULKY}}


def full_records(events: list[dict[str, Any]]) -> list[Any]:
    """The whole records of the `model_call` events among `events` (those stored with their
    request: a record as `ModelCallRecord.to_dict` writes it always has one)."""
    return [event["record"] for event in events
            if event.get("type") == "model_call" and isinstance(event.get("record"), dict)
            and "request" in event["record"]]
