"""A session's rows in the SQLite file (schema v9): where they sit, how a transaction writes
them, and the search index kept up with them.

Each session has a number (`sessions.num`, given when it is created), and its messages and
events are keyed `(num << 32) + n` (a message's `n` is its `seq`): a session's rows are one run
of keys of each table's own B-tree, in the order they were written. A reader finds them by a
range of keys, and a write adds to the table alone, with no index of sessions to keep up (each
such index cost a turn's commit one to two pages of the WAL). The keys are given by the
transaction writing (it holds the database's write lock: `BEGIN IMMEDIATE`), from the newest key
stored, so two processes writing one file never take the same one.

A session's messages are keyed one after another, never one removed alone, so those of its live
epoch are the keys from the epoch's first (`sessions.live_from`, its seq) to the newest: a count
of them is a subtraction, where counting the rows would read every page they are on (files
older than v9 have no `live_from` and are counted row by row).

Message text is indexed for search in bulk, at search time, not as it is written:
`sessions.indexed` is the newest `seq` of the session in `messages_fts`, and a search first
indexes every session's messages after it, in one transaction (`index_all`). A run's
transactions write no page of the index (at a run's end they wrote ~0.4 WAL pages a turn and
~33 k instructions a turn more, docs/benchmarks.md).
"""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopwright.errors import SessionError
from loopwright.messages import Message, Usage
from loopwright.store.rows import (
    BATCH,
    checked_runs,
    damaged_session_row,
    events_at,
    events_row,
    is_count,
    message_row,
    record_json,
)
from loopwright.store.turns import (
    TURN_RECORD,
    is_turn_end,
    running,
    turn_at,
    turn_record,
    turns_in_order,
    with_running_totals,
)

LAST = (1 << 32) - 1  # a session's last key, from its first (its base)

# the number a new session gets (inside the transaction creating it)
NEXT_NUM = "(SELECT coalesce(max(num), 0) + 1 FROM sessions)"
# `?1`..`?2`: the first and last key of a session's rows (`key_range`)
IN_RANGE = "id BETWEEN ?1 AND ?2"

_INSERT_MESSAGE = ("INSERT INTO messages (id, session_id, epoch, seq, role, content, data, "
                   "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_BATCH = ("INSERT INTO events (id, session_id, run_id, created, type, data) "
                 "VALUES (?, ?, ?, ?, ?, ?)")
_INSERT_EVENT = ("INSERT INTO events (id, session_id, run_id, created, type, call_id, name, "
                 "is_error, duration, size, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def key_range(db: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """(first key, last key) of the session's rows: the parameters of a reader's `IN_RANGE`
    (an empty range for a session that does not exist)."""
    row = db.execute("SELECT num FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return 0, -1
    base = _base(session_id, row[0])
    return base, base + LAST


def _base(session_id: str, num: Any) -> int:
    """The first key of a session's rows, from its number (`damaged` when the number is not
    one loopwright gives: its keys would be another session's, or not fit)."""
    if not is_count(num) or not 0 < num < 1 << 31:
        raise damaged_session_row(session_id, "num", num)
    return int(num) << 32


def _epoch(session_id: str, epoch: Any) -> int:
    if not is_count(epoch):
        raise damaged_session_row(session_id, "epoch", epoch)
    return int(epoch)


def _newest(table: str, num: str = "num") -> str:
    """A subquery: the newest key of `table` in the range of session number `num` (a column
    of the row of `sessions` the query reads), or null."""
    return (f"(SELECT id FROM {table} WHERE id BETWEEN {num} << 32 AND ({num} << 32) + {LAST} "
            "ORDER BY id DESC LIMIT 1)")


# a session's number, live epoch and newest message and event keys, in one statement
_SESSION_KEYS = (f"SELECT num, epoch, {_newest('messages')}, {_newest('events')} "
                 "FROM sessions WHERE id = ?")

# a session's number, live epoch, its first seq and the newest message's key
_LIVE = f"SELECT num, epoch, live_from, {_newest('messages')} FROM sessions WHERE id = ?"


class SessionRows:
    """One transaction's writes to a session's rows: each message and event keyed next after
    the session's newest (read once, with the session's number and epoch)."""

    def __init__(self, db: sqlite3.Connection, session_id: str) -> None:
        row = db.execute(_SESSION_KEYS, (session_id,)).fetchone()
        if row is None:
            raise SessionError(f"no session {session_id!r}; create it first")
        self.db, self.session_id = db, session_id
        self.base, self.epoch = _base(session_id, row[0]), _epoch(session_id, row[1])
        self._message = self.base if row[2] is None else int(row[2])  # the newest keys
        self._event = self.base if row[3] is None else int(row[3])

    def append(self, messages: Sequence[Message], now: float) -> None:
        """Messages after the session's newest, in its live epoch."""
        key = self._message
        rows = []
        for message in messages:
            key += 1
            rows.append((key, self.session_id, self.epoch, key - self.base,
                         *message_row(message), now))
        self.db.executemany(_INSERT_MESSAGE, rows)
        self._message = key

    def compact(self, history: Sequence[Message], now: float) -> int:
        """Start the session's next epoch with `history`; the new epoch's number."""
        self.epoch = int(self.db.execute(
            "UPDATE sessions SET epoch = epoch + 1, live_from = ?, updated = ? WHERE id = ? "
            "RETURNING epoch", (self._message - self.base + 1, now, self.session_id)
        ).fetchone()[0])
        self.append(history, now)
        return self.epoch

    def events(self, run_id: str, events: list[dict[str, Any]], now: float) -> None:
        """One row for events of run `run_id` written together (`rows.events_row`)."""
        row = events_row(self.session_id, run_id, now, events)
        if row[3] != BATCH:
            self._add_event(row)
            return
        # a turn's row: its tool columns are null, and left to their default rather than
        # bound, since binding None takes sqlite3's adapter lookup (~1,300 instructions each)
        self._event += 1
        self.db.execute(_INSERT_BATCH, (self._event, *row[:4], row[-1]))

    def turn(self, run_id: str, turn: int, usage: Usage, cost: float | None, now: float
             ) -> None:
        """A turn's record as an events row of its own (it replaces its `turn_end` event's)."""
        self._add_event((self.session_id, run_id, now, TURN_RECORD, None, None, None, None,
                         None, record_json(turn_record(turn, usage, cost))))

    def _add_event(self, row: tuple[Any, ...]) -> None:
        self._event += 1
        self.db.execute(_INSERT_EVENT, (self._event, *row))


def text_or_bytes(raw: bytes) -> str | bytes:
    """A TEXT value as the store reads it (the connection's `text_factory`): its text, or its
    bytes when they are not UTF-8. A row holding such bytes is then damaged where its fields
    are checked, naming its session, as a BLOB in a text column is; decoding them failed the
    whole read instead, naming no session (a listing stopped at the first)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw


def check_file(path: Path) -> None:
    """Refuse a database path that is there but is not a file: SQLite reported a directory, a
    device (a link to /dev/zero) or a pipe as a disk I/O error, or waited on the pipe."""
    try:
        mode = path.stat().st_mode
    except OSError:  # not there yet (created), or unreachable (SQLite says why)
        return
    if not stat.S_ISREG(mode):
        raise SessionError(f"{path} is not a session database but a "
                           f"{'directory' if stat.S_ISDIR(mode) else 'device or pipe'}; "
                           "give the path of a session database file")


def count_messages(db: sqlite3.Connection, session_id: str, epoch: int | None) -> int:
    """Messages in one epoch of the session (None: the live one)."""
    row = db.execute(_LIVE, (session_id,)).fetchone()
    if row is None:
        return 0
    base, live = _base(session_id, row[0]), _epoch(session_id, row[1])
    live_from, newest = row[2:]
    if live_from is not None and not is_count(live_from):
        raise damaged_session_row(session_id, "live_from", live_from)
    if (epoch is None or epoch == live) and live_from is not None:
        return 0 if newest is None else max(0, int(newest) - base - live_from + 1)
    return int(db.execute("SELECT count(*) FROM messages WHERE id BETWEEN ? AND ? AND epoch = ?",
                          (base, base + LAST, live if epoch is None else epoch)).fetchone()[0])


def index_all(db: sqlite3.Connection) -> None:
    """Index every session's messages not yet in the search index (inside the caller's
    transaction): one pass over the sessions, one range of each that has any."""
    pending = db.execute(
        "SELECT id, base, last - base FROM (SELECT id, indexed, num << 32 AS base, "
        f"{_newest('messages', 's.num')} AS last FROM sessions s) WHERE last - base > indexed"
    ).fetchall()
    for session_id, base, last in pending:
        _index(db, session_id, base, last)


def _index(db: sqlite3.Connection, session_id: str, base: int, last: int) -> None:
    """Add the session's messages after `sessions.indexed`, up to seq `last`, to the index."""
    db.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages "
               "WHERE id BETWEEN (SELECT ?1 + indexed + 1 FROM sessions WHERE id = ?3) "
               "AND ?1 + ?2", (base, last, session_id))
    db.execute("UPDATE sessions SET indexed = ? WHERE id = ? AND indexed < ?",
               (last, session_id, last))


def delete_rows(db: sqlite3.Connection, session_id: str) -> None:
    """Remove the session's messages and events (before its row: no foreign key reaches
    them, and their index entries are found through it)."""
    keys = key_range(db, session_id)
    db.execute(f"DELETE FROM messages WHERE {IN_RANGE}", keys)
    db.execute(f"DELETE FROM events WHERE {IN_RANGE}", keys)


def session_turns(db: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's turns (`SQLiteStore.turns`), inside the caller's read."""
    rows = db.execute(f"SELECT run_id, created, data FROM events WHERE {IN_RANGE} AND type "
                      "IN (?3, 'turn_end', ?4) ORDER BY id",
                      (*key_range(db, session_id), BATCH, TURN_RECORD)).fetchall()
    return turns_in_order(
        turn_at(session_id, run_id, created, event) for run_id, created, data in rows
        for event in events_at(session_id, run_id, created, data) if is_turn_end(event))


def session_runs(db: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's runs (`SQLiteStore.runs`), inside the caller's read."""
    cursor = db.execute("SELECT * FROM runs WHERE session_id = ? ORDER BY started, rowid",
                        (session_id,))
    names = [d[0] for d in cursor.description]
    runs = checked_runs(session_id, [dict(zip(names, row, strict=True))
                                     for row in cursor.fetchall()])
    return with_running_totals(runs, session_turns(db, session_id)) if running(runs) else runs
