"""The session database schema and its migrations (versioned with `PRAGMA user_version`).

`MIGRATIONS[n]` takes a database from version n to n + 1. Never edit a released migration:
append a new one, so every existing database can be walked forward.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

from loopwright.messages import Usage
from loopwright.store.rows import USAGE_COLUMNS, record_json
from loopwright.store.turns import TURN_RECORD, turn_record

_V1 = """
CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY,
    parent_id          TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    title              TEXT NOT NULL DEFAULT '',
    model              TEXT NOT NULL DEFAULT '',
    cwd                TEXT NOT NULL DEFAULT '',
    system_prompt      TEXT,
    created            REAL NOT NULL,
    updated            REAL NOT NULL,
    -- the lease of the run writing to this session (see SQLiteStore.acquire)
    lock_owner         TEXT,
    lock_pid           INTEGER,
    lock_host          TEXT,
    lock_expires       REAL
);
CREATE INDEX sessions_by_updated ON sessions(updated DESC);
CREATE INDEX sessions_by_cwd ON sessions(cwd, updated DESC);
CREATE INDEX sessions_by_parent ON sessions(parent_id);

-- the conversation, in order; `data` is Message.to_dict() without role and content
CREATE TABLE messages (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    data        TEXT NOT NULL,
    created     REAL NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE TRIGGER messages_touch_session AFTER INSERT ON messages BEGIN
    UPDATE sessions SET updated = NEW.created WHERE id = NEW.session_id;
END;

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (NEW.id, NEW.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', OLD.id, OLD.content);
END;

-- one row per run on a session: usage and cost as of the last finished turn (a run that
-- compacts goes on in a new session: its usage up to then stays with the old one)
CREATE TABLE runs (
    id                  TEXT NOT NULL,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model               TEXT NOT NULL DEFAULT '',
    pid                 INTEGER,
    started             REAL NOT NULL,
    ended               REAL,
    stop_reason         TEXT,
    error               TEXT,
    turns               INTEGER NOT NULL DEFAULT 0,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    requests            INTEGER NOT NULL DEFAULT 0,
    cost                REAL,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX runs_by_session ON runs(session_id, started);

-- the run's event stream (text deltas excluded: the messages hold the text) and the audit log:
-- tool rows carry call id, tool name, error flag, duration and result size in their own columns
CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL,
    created     REAL NOT NULL,
    type        TEXT NOT NULL,
    call_id     TEXT,
    name        TEXT,
    is_error    INTEGER,
    duration    REAL,
    size        INTEGER,
    data        TEXT NOT NULL
);
CREATE INDEX events_by_session ON events(session_id, id);
"""

# v2: a session keeps its id through compaction (each compaction starts a new `epoch` of its
# messages; older epochs are its lineage), `parent_id` links a sub-agent's session to its
# parent's, and what every turn spent is stored
_V2 = """
ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_by_epoch ON messages(session_id, epoch, seq);

CREATE TABLE turns (
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id              TEXT NOT NULL,
    turn                INTEGER NOT NULL,
    created             REAL NOT NULL,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    requests            INTEGER NOT NULL DEFAULT 0,
    cost                REAL,
    PRIMARY KEY (session_id, run_id, turn)
);
"""

# v3: every model call of a run (`loopwright.events.ModelCallRecord`): what is queried in
# columns, the whole record (request, response, usage…) as JSON in `data`
_V3 = """
CREATE TABLE model_calls (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id          TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    turn            INTEGER NOT NULL DEFAULT 0,
    purpose         TEXT NOT NULL,
    model           TEXT NOT NULL DEFAULT '',
    provider        TEXT NOT NULL DEFAULT '',
    started         REAL NOT NULL,
    latency         REAL NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cost            REAL,
    error           TEXT,
    data            TEXT NOT NULL
);
CREATE INDEX model_calls_by_session ON model_calls(session_id, id);
"""

# v4: a session keeps the provider it ran against (never the key), so --resume reuses it
_V4 = """
ALTER TABLE sessions ADD COLUMN base_url TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN api_mode TEXT NOT NULL DEFAULT '';
"""

# v5: a turn writes fewer pages. Message text is indexed for search in bulk, not row by row:
# `fts_progress.upto` is the newest message id in `messages_fts`; the store indexes the rest in
# one statement before a search and when a run ends (`SQLiteStore.index_messages`). A deleted
# message leaves the index only if it was in it, and the mark never stays above the newest id
# (a later message may take a deleted one's id). `sessions.updated` is set by the store (at most
# every few seconds while a run writes), not by a trigger on every message
_V5 = """
DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_touch_session;
CREATE TABLE fts_progress (upto INTEGER NOT NULL);
INSERT INTO fts_progress SELECT coalesce(max(id), 0) FROM messages;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        SELECT 'delete', OLD.id, OLD.content FROM fts_progress WHERE OLD.id <= upto;
    UPDATE fts_progress SET upto = (SELECT coalesce(max(id), 0) FROM messages)
        WHERE upto > (SELECT coalesce(max(id), 0) FROM messages);
END;
"""

# v6: a turn's transaction writes fewer B-trees (each a page or more of the WAL a turn). `turns`
# is kept in its primary key's order (WITHOUT ROWID: one B-tree, not a table and its key's
# index), and `messages` has one index for both of its orders, (session_id, epoch, seq), not
# (session_id, seq) and (session_id, epoch, seq): a session's newest seq is in its newest epoch
# (a compaction numbers on from the highest seq), which is where `SQLiteStore` looks for it.
# Message ids are kept, so the search index stays valid; its delete trigger is made again
_V6 = """
CREATE TABLE turns_v6 (
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id              TEXT NOT NULL,
    turn                INTEGER NOT NULL,
    created             REAL NOT NULL,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    requests            INTEGER NOT NULL DEFAULT 0,
    cost                REAL,
    PRIMARY KEY (session_id, run_id, turn)
) WITHOUT ROWID;
INSERT INTO turns_v6 SELECT session_id, run_id, turn, created, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, reasoning_tokens, requests, cost FROM turns;
DROP TABLE turns;
ALTER TABLE turns_v6 RENAME TO turns;

CREATE TABLE messages_v6 (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    data        TEXT NOT NULL,
    created     REAL NOT NULL,
    epoch       INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, epoch, seq)
);
INSERT INTO messages_v6 (id, session_id, seq, role, content, data, created, epoch)
    SELECT id, session_id, seq, role, content, data, created, epoch FROM messages ORDER BY id;
DROP TRIGGER messages_fts_delete;
DROP TABLE messages;
ALTER TABLE messages_v6 RENAME TO messages;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        SELECT 'delete', OLD.id, OLD.content FROM fts_progress WHERE OLD.id <= upto;
    UPDATE fts_progress SET upto = (SELECT coalesce(max(id), 0) FROM messages)
        WHERE upto > (SELECT coalesce(max(id), 0) FROM messages);
END;
"""

# v7: a turn's transaction writes two B-trees fewer. A `model_call` event is stored whole in its
# events row (the row of the turn's events) instead of slim there and whole in `model_calls` (a
# table and its per-session index, ~2.5 WAL pages a turn); the store gives the event back slim
# (`store/calls.py`). The records of earlier calls become events rows of their own, of type
# 'call_record' (`rows.CALL_RECORD`), after every row there is, so a session's calls keep their
# order: the old ones, then those written from now on
_V7 = """
INSERT INTO events (session_id, run_id, created, type, call_id, data)
    SELECT session_id, run_id, started, 'call_record', call_id, data FROM model_calls ORDER BY id;
DROP TABLE model_calls;
"""


def _v8(db: sqlite3.Connection) -> None:
    """v8: a turn's transaction writes one B-tree fewer. A turn's record (what it spent) is
    read from its `turn_end` event, which the turn's events row holds anyway
    (`store/turns.py`), not written again into `turns`. Each row of `turns` becomes an events
    row of type 'turn_record' (`turns.TURN_RECORD`), after every row there is, so it replaces
    what the turn's event says, as the table did. In Python, not SQL: SQLite's JSON keeps 15
    digits of a cost, and a cost read back must be the cost stored."""
    rows = db.execute("SELECT session_id, run_id, turn, created, input_tokens, output_tokens, "
                      "cache_read_tokens, cache_write_tokens, reasoning_tokens, requests, cost "
                      "FROM turns ORDER BY created, turn").fetchall()
    db.executemany(
        "INSERT INTO events (session_id, run_id, created, type, data) VALUES (?, ?, ?, ?, ?)",
        [(sid, run_id, created, TURN_RECORD, record_json(
            turn_record(turn, Usage(**dict(zip(USAGE_COLUMNS, usage, strict=True))), cost)))
         for sid, run_id, turn, created, *usage, cost in rows])
    db.execute("DROP TABLE turns")


# v9: a turn's transaction writes two B-trees fewer. A session has a number (`num`), and its
# messages and events are keyed `(num << 32) + n` (a message's n is its seq;
# `store/sqlite_rows.py`): a session's rows are one run of each table's own keys, in order, so
# the index of messages by (session_id, epoch, seq) and `events_by_session` (~3.2 WAL pages a turn
# together) go, and with them the foreign keys (a session's rows are deleted by their keys; a
# cascade without an index would read the whole table). The search index is rebuilt for the new
# message ids; `sessions.indexed` (the newest seq it holds of the session) replaces
# `fts_progress`; `sessions.live_from` (the live epoch's first seq, for sessions v9 made: null
# here) makes counting the live epoch's messages a subtraction. Messages are numbered on from a
# session's highest seq, so its epochs are consecutive runs of seqs and keys. `runs_by_session`
# goes too: the runs' key (session_id, id) finds a session's runs, and a run's first write no
# longer adds to a second index
_V9 = """
DROP INDEX runs_by_session;
ALTER TABLE sessions ADD COLUMN num INTEGER;
UPDATE sessions SET num = rowid;
CREATE UNIQUE INDEX sessions_by_num ON sessions(num);
ALTER TABLE sessions ADD COLUMN indexed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN live_from INTEGER;

CREATE TABLE events_v9 (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    created     REAL NOT NULL,
    type        TEXT NOT NULL,
    call_id     TEXT,
    name        TEXT,
    is_error    INTEGER,
    duration    REAL,
    size        INTEGER,
    data        TEXT NOT NULL
);
INSERT INTO events_v9 (id, session_id, run_id, created, type, call_id, name, is_error, duration,
                       size, data)
    SELECT (s.num << 32) + row_number() OVER (PARTITION BY e.session_id ORDER BY e.id),
           e.session_id, e.run_id, e.created, e.type, e.call_id, e.name, e.is_error,
           e.duration, e.size, e.data
    FROM events e JOIN sessions s ON s.id = e.session_id ORDER BY 1;
DROP TABLE events;
ALTER TABLE events_v9 RENAME TO events;

-- `epoch` before the text: counting an epoch's messages reads no overflow page
CREATE TABLE messages_v9 (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    epoch       INTEGER NOT NULL DEFAULT 0,
    seq         INTEGER NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    data        TEXT NOT NULL,
    created     REAL NOT NULL
);
INSERT INTO messages_v9 (id, session_id, epoch, seq, role, content, data, created)
    SELECT (s.num << 32) + m.seq, m.session_id, m.epoch, m.seq, m.role, m.content, m.data,
           m.created
    FROM messages m JOIN sessions s ON s.id = m.session_id ORDER BY 1;
DROP TRIGGER messages_fts_delete;
DROP TABLE messages;
ALTER TABLE messages_v9 RENAME TO messages;
DROP TABLE fts_progress;
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
UPDATE sessions SET indexed = coalesce((SELECT seq FROM messages WHERE id BETWEEN num << 32
    AND (num << 32) + 4294967295 ORDER BY id DESC LIMIT 1), 0);
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        SELECT 'delete', OLD.id, OLD.content FROM sessions
        WHERE id = OLD.session_id AND OLD.seq <= indexed;
END;
"""

MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    _V1, _V2, _V3, _V4, _V5, _V6, _V7, _v8, _V9]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, version: int) -> None:
    """Run every migration after `version` (inside the caller's transaction)."""
    for step in MIGRATIONS[version:]:
        if callable(step):
            step(db)
            continue
        for statement in _statements(step):
            db.execute(statement)


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (trigger bodies hold semicolons of their own)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        yield pending.strip()
