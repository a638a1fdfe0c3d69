"""What a turn spent and what a run has spent so far, read from rows a turn writes anyway.

A turn's record is its `turn_end` event (the run's own: a sub-agent's, forwarded with its tag,
belongs to the sub-agent's session): its usage and cost go to the store in the turn's events row.
SQLite (schema v8) keeps no table of turns: `SQLiteStore.turns` reads them from those events and
from `turn_record` rows (a turn stored through `record_turn`, or moved from the v7 table).
PostgreSQL keeps its `turns` table (one part more of the turn's one statement, cheaper to keep
than to read back from its events), written from the same events (`writes.with_turns`). A run's
row is written when the run starts and when it ends, not at every turn: a run that has not ended
(still running, or killed) is given its totals so far from its turns (`with_running_totals`),
so a killed run's usage stays truthful.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from loopwright.messages import Usage
from loopwright.store.rows import DECODING_ERRORS, USAGE_COLUMNS, damaged

# the `type` of an events row (SQLite) holding one turn's record as a `turn_end`-shaped object:
# stored through `record_turn`, or moved from the `turns` table of schema v7; not an event
TURN_RECORD = "turn_record"


def is_turn_end(event: dict[str, Any]) -> bool:
    """Whether `event` (a stored event's JSON form) ends one of the run's own turns."""
    return event.get("type") == "turn_end" and not event.get("agent")


def turn_record(turn: int, usage: Usage, cost: float | None) -> dict[str, Any]:
    """A turn's record in the form its `turn_end` event has (what a `turn_record` row holds)."""
    return {"type": "turn_end", "turn": turn, "usage": usage.to_dict(), "cost": cost}


def turn_at(session_id: str, run_id: str, created: float, event: dict[str, Any]
             ) -> dict[str, Any]:
    """A turn's row, in the columns the v7 `turns` table had, from its `turn_end` event."""
    try:
        usage = event.get("usage") or {}
        cost = event.get("cost")
        return {"session_id": session_id, "run_id": run_id, "turn": int(event["turn"]),
                "created": created, **{c: int(usage.get(c) or 0) for c in USAGE_COLUMNS},
                "cost": None if cost is None else float(cost)}
    except DECODING_ERRORS as exc:
        raise damaged(session_id, f"a turn of run {run_id}", exc) from None


def turns_in_order(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn rows (in the order they were stored) as the v7 table gave them back: one per run
    and turn, a later record of a turn replacing an earlier one, ordered by time and turn."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        latest.pop((row["run_id"], row["turn"]), None)
        latest[(row["run_id"], row["turn"])] = row
    return sorted(latest.values(), key=lambda row: (row["created"], row["turn"]))


def running(runs: Sequence[dict[str, Any]]) -> bool:
    """Whether one of `runs` (rows of `runs`) has not ended: only then are its turns read."""
    return any(run["ended"] is None for run in runs)


def with_running_totals(runs: list[dict[str, Any]], turns: Sequence[dict[str, Any]]
                        ) -> list[dict[str, Any]]:
    """`runs` (rows of `runs`) with each run that has not ended given its turns, usage and
    cost so far, summed from its `turns` (a run with no turn stored keeps its row); for
    `runs` that are `running`."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for turn in turns:
        by_run.setdefault(turn["run_id"], []).append(turn)
    out = []
    for run in runs:
        done = by_run.get(run["id"]) if run["ended"] is None else None
        if done:
            costs = [t["cost"] for t in done]
            run = {**run, "turns": max(t["turn"] for t in done),
                   **{c: sum(t[c] for t in done) for c in USAGE_COLUMNS},
                   "cost": None if None in costs else sum(costs)}
        out.append(run)
    return out


def run_totals(runs: Sequence[dict[str, Any]]) -> tuple[Usage, float | None]:
    """What `runs` (with their running totals) spent together; the cost is None when any run
    that made a request has no price."""
    usage = Usage(**{c: sum(int(run[c]) for run in runs) for c in USAGE_COLUMNS})
    priced = [run["cost"] for run in runs if run["cost"] is not None]
    unpriced = any(run["cost"] is None and run["requests"] > 0 for run in runs)
    return usage, None if unpriced or not priced else float(sum(priced))
