"""Model call records in the session store: the `model_calls` row of a `model_call` event, one
form for the SQLite and the PostgreSQL store.

A run's `model_call` events reach the store through `record_events` like every other event. The
store keeps the whole `ModelCallRecord` in `model_calls` (what is queried — purpose, model,
attempts, latency, tokens, cost, error — in columns of its own, the record as JSON in `data`);
the event log keeps the event without the record's request and response, so nothing is stored
twice."""

from __future__ import annotations

from typing import Any

from loopwright.store.rows import record_json

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
           record.get("cost"), record.get("error"),
           record_json(record))
    slim = {k: v for k, v in record.items() if k not in _BULKY}
    return {**event, "record": slim}, row
