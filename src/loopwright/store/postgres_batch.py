"""A run's write batch for PostgreSQL as one statement: every insert and upsert of the batch is a
data-modifying `WITH` part of a single statement, so a turn costs one statement, one round trip
and one commit (a statement is atomic on its own), rather than psycopg's per-statement work for
each of the ~8 a turn writes.

The parts run on one snapshot and cannot see each other's rows, which is why a batch that starts
a new epoch (`Compact`: the messages after it must see the new epoch) is left to the
statement-per-write path (`None`). Messages are numbered from the session's highest `seq` as
the statement starts, plus their place in the batch. A part may change a row once only, so the
session's row is updated by one part: its `updated` time and the lease given back together.

The statement is written with PostgreSQL's own placeholders (`$1`, …), sent as it is by a raw
cursor: psycopg parses a `%s` statement for its placeholders on every call once it has more
than 50 parameters (its cache stops there; a turn's batch has ~60), which cost more client CPU
than the rest of the write. `$n` also lets the session id and the time be sent once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopwright.store.calls import CALL_COLUMNS, split_model_call
from loopwright.store.rows import (
    RUN_ON_CONFLICT,
    TURN_ON_CONFLICT,
    USAGE_COLUMNS,
    events_row,
    message_row,
    run_row,
    turn_row,
)
from loopwright.store.writes import (
    AppendMessages,
    Compact,
    OpenSession,
    RecordEvents,
    RecordRun,
    RecordTurn,
    ReleaseLease,
    StoreWrite,
)


class _Statement:
    """The parts of one statement and its parameters, numbered as they are added."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: list[Any] = []

    def value(self, value: Any) -> str:
        self.params.append(value)
        return f"${len(self.params)}"

    def values(self, row: Sequence[Any]) -> str:
        first = len(self.params) + 1
        self.params.extend(row)
        return ", ".join([f"${n}" for n in range(first, first + len(row))])

    def sql(self) -> str:
        head = ", ".join(f"w{n} AS ({sql})" for n, sql in enumerate(self.parts[:-1]))
        return f"WITH {head} {self.parts[-1]}" if head else self.parts[-1]


def one_statement(session_id: str, writes: Sequence[StoreWrite], now: float
                  ) -> tuple[str, list[Any]] | None:
    """(SQL with `$n` placeholders, parameters) writing `writes` (already `merged`), or None
    for a batch with a `Compact` or an `OpenSession` (the parts after it must see the new
    session's row)."""
    if any(isinstance(write, (Compact, OpenSession)) for write in writes):
        return None
    statement = _Statement()
    sid, at = statement.value(session_id), statement.value(now)
    touched, release = False, None
    for write in writes:
        if isinstance(write, AppendMessages):
            _messages(statement, sid, at, write)
            touched = True
        elif isinstance(write, ReleaseLease):
            release = write.owner
        elif isinstance(write, RecordEvents):
            _events(statement, session_id, write, now)
        elif isinstance(write, RecordRun):
            row = run_row(session_id, write.record, write.model, write.ended, now)
            statement.parts.append(
                "INSERT INTO runs (id, session_id, model, pid, started, ended, stop_reason, "
                "error, turns, " + ", ".join(USAGE_COLUMNS) + ", cost) VALUES ("
                + statement.values(row) + ") " + RUN_ON_CONFLICT)
        elif isinstance(write, RecordTurn):
            row = turn_row(session_id, write.run_id, write.turn, write.usage, write.cost, now)
            statement.parts.append(
                "INSERT INTO turns (session_id, run_id, turn, created, "
                + ", ".join(USAGE_COLUMNS) + ", cost) VALUES (" + statement.values(row) + ") "
                + TURN_ON_CONFLICT)
    if touched or release is not None:
        _session_row(statement, sid, at if touched else None, release)
    if not statement.parts:
        return None
    return statement.sql(), statement.params


def _messages(statement: _Statement, sid: str, at: str, write: AppendMessages) -> None:
    rows = []
    for n, message in enumerate(write.messages, 1):
        rows.append(f"({sid}, (SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = "
                    f"{sid}) + {n}, (SELECT epoch FROM sessions WHERE id = {sid}), "
                    f"{statement.values(message_row(message))}, {at})")
    statement.parts.append("INSERT INTO messages (session_id, seq, epoch, role, content, data, "
                           "created) VALUES " + ", ".join(rows))


def _session_row(statement: _Statement, sid: str, at: str | None, release: str | None
                 ) -> None:
    """The session's `updated` time (when messages were written) and its lease given back
    (when `release` holds it), in one part."""
    sets = [] if at is None else [f"updated = {at}"]
    if release is not None:
        owner = statement.value(release)
        sets.extend(f"{column} = CASE WHEN lock_owner = {owner} THEN NULL ELSE {column} END"
                    for column in ("lock_pid", "lock_host", "lock_expires"))
        sets.append(f"lock_owner = nullif(lock_owner, {owner})")  # right sides read the old row
    statement.parts.append(f"UPDATE sessions SET {', '.join(sets)} WHERE id = {sid}")


def _events(statement: _Statement, session_id: str, write: RecordEvents, now: float) -> None:
    split = [split_model_call(write.run_id, event) for event in write.events]
    calls = [(session_id, *call) for _, call in split if call is not None]
    if calls:
        statement.parts.append(
            f"INSERT INTO model_calls (session_id, {', '.join(CALL_COLUMNS)}) VALUES "
            + ", ".join(f"({statement.values(call)})" for call in calls))
    row = events_row(session_id, write.run_id, now, [event for event, _ in split])
    statement.parts.append("INSERT INTO events (session_id, run_id, created, type, data) "
                           f"VALUES ({statement.values((*row[:4], row[-1]))})")
