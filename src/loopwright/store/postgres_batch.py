"""A run's write batch for PostgreSQL as one statement: every insert and upsert of the batch is a
data-modifying `WITH` part of a single statement, so a turn costs one statement, one round trip
and one commit (a statement is atomic on its own), rather than psycopg's per-statement work for
each of the ~8 a turn writes.

The parts run on one snapshot and cannot see each other's rows, which is why a batch that starts
a new epoch (`Compact`: the messages after it must see the new epoch) is left to the
statement-per-write path (`None`). Messages are numbered from the session's highest `seq` as
the statement starts, plus their place in the batch. A part may change a row once only, so the
session's row is updated by one part: its `updated` time and the lease given back together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopwright.store.calls import CALL_COLUMNS, split_model_call
from loopwright.store.rows import USAGE_COLUMNS, events_row, message_row, run_row, turn_row
from loopwright.store.writes import (
    AppendMessages,
    Compact,
    RecordEvents,
    RecordRun,
    ReleaseLease,
    StoreWrite,
)

_MESSAGE_VALUES = (
    "(%s, (SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = %s) + {n}, "
    "(SELECT epoch FROM sessions WHERE id = %s), %s, %s, %s, %s)")
_RUN_UPDATE = (
    "ON CONFLICT (session_id, id) DO UPDATE SET ended = excluded.ended, "
    "stop_reason = excluded.stop_reason, error = excluded.error, turns = excluded.turns, "
    "cost = excluded.cost, " + ", ".join(f"{c} = excluded.{c}" for c in USAGE_COLUMNS))
_TURN_UPDATE = ("ON CONFLICT (session_id, run_id, turn) DO UPDATE SET cost = excluded.cost, "
                + ", ".join(f"{c} = excluded.{c}" for c in USAGE_COLUMNS))


def one_statement(session_id: str, writes: Sequence[StoreWrite], now: float
                  ) -> tuple[str, list[Any]] | None:
    """(SQL, parameters) writing `writes` (already `merged`), or None for a batch with a
    `Compact`."""
    parts: list[str] = []
    params: list[Any] = []
    touched, release = False, None

    def part(sql: str, values: list[tuple[Any, ...]]) -> None:
        parts.append(sql)
        for row in values:
            params.extend(row)

    for write in writes:
        if isinstance(write, Compact):
            return None
        if isinstance(write, AppendMessages):
            _messages(session_id, write, now, part)
            touched = True
        elif isinstance(write, ReleaseLease):
            release = write.owner
        elif isinstance(write, RecordEvents):
            _events(session_id, write, now, part)
        elif isinstance(write, RecordRun):
            row = run_row(session_id, write.record, write.model, write.ended, now)
            part("INSERT INTO runs (id, session_id, model, pid, started, ended, stop_reason, "
                 "error, turns, " + ", ".join(USAGE_COLUMNS) + ", cost) VALUES ("
                 + _marks(len(row)) + ") " + _RUN_UPDATE, [row])
        else:
            row = turn_row(session_id, write.run_id, write.turn, write.usage, write.cost, now)
            part("INSERT INTO turns (session_id, run_id, turn, created, "
                 + ", ".join(USAGE_COLUMNS) + ", cost) VALUES (" + _marks(len(row)) + ") "
                 + _TURN_UPDATE, [row])
    if touched or release is not None:
        _session_row(session_id, now if touched else None, release, part)
    if not parts:
        return None
    head = ", ".join(f"w{n} AS ({sql})" for n, sql in enumerate(parts[:-1]))
    return (f"WITH {head} {parts[-1]}" if head else parts[-1]), params


def _messages(session_id: str, write: AppendMessages, now: float, part: Any) -> None:
    rows = [(session_id, session_id, session_id, *message_row(m), now) for m in write.messages]
    part("INSERT INTO messages (session_id, seq, epoch, role, content, data, created) VALUES "
         + ", ".join(_MESSAGE_VALUES.format(n=n) for n in range(1, len(rows) + 1)), rows)


def _session_row(session_id: str, updated: float | None, release: str | None, part: Any
                 ) -> None:
    """The session's `updated` time (when messages were written) and its lease given back
    (when `release` holds it), in one part."""
    sets: list[str] = []
    values: list[Any] = []
    if updated is not None:
        sets.append("updated = %s")
        values.append(updated)
    if release is not None:
        sets.extend(f"{column} = CASE WHEN lock_owner = %s THEN NULL ELSE {column} END"
                    for column in ("lock_pid", "lock_host", "lock_expires"))
        sets.append("lock_owner = nullif(lock_owner, %s)")  # every right side reads the old row
        values.extend([release] * 4)
    part(f"UPDATE sessions SET {', '.join(sets)} WHERE id = %s", [(*values, session_id)])


def _events(session_id: str, write: RecordEvents, now: float, part: Any) -> None:
    split = [split_model_call(write.run_id, event) for event in write.events]
    calls = [(session_id, *call) for _, call in split if call is not None]
    if calls:
        part(f"INSERT INTO model_calls (session_id, {', '.join(CALL_COLUMNS)}) VALUES "
             + ", ".join(f"({_marks(len(CALL_COLUMNS) + 1)})" for _ in calls), calls)
    row = events_row(session_id, write.run_id, now, [event for event, _ in split])
    part("INSERT INTO events (session_id, run_id, created, type, data) VALUES "
         "(%s, %s, %s, %s, %s)", [(*row[:4], row[-1])])


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)
