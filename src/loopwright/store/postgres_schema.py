"""The PostgreSQL session schema and its migrations (versioned in `loopwright_schema`).

`MIGRATIONS[n]` takes a database from version n to n + 1; never edit a released one. Message
text is searchable through a stored `tsvector` column with a GIN index. Timestamps are Unix
seconds (as in the SQLite store), taken from the database's clock for leases so that the hosts
sharing it need not agree on the time.
"""

from __future__ import annotations

_V1 = """
CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    parent_id      TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    title          TEXT NOT NULL DEFAULT '',
    model          TEXT NOT NULL DEFAULT '',
    cwd            TEXT NOT NULL DEFAULT '',
    system_prompt  TEXT,
    created        DOUBLE PRECISION NOT NULL,
    updated        DOUBLE PRECISION NOT NULL,
    epoch          INTEGER NOT NULL DEFAULT 0,
    lock_owner     TEXT,
    lock_pid       INTEGER,
    lock_host      TEXT,
    lock_expires   DOUBLE PRECISION
);
CREATE INDEX sessions_by_updated ON sessions(updated DESC);
CREATE INDEX sessions_by_cwd ON sessions(cwd, updated DESC);
CREATE INDEX sessions_by_parent ON sessions(parent_id);

CREATE TABLE messages (
    id          BIGSERIAL PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    epoch       INTEGER NOT NULL DEFAULT 0,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    data        TEXT NOT NULL,
    created     DOUBLE PRECISION NOT NULL,
    search      TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (session_id, seq)
);
CREATE INDEX messages_by_epoch ON messages(session_id, epoch, seq);
CREATE INDEX messages_search ON messages USING GIN (search);

CREATE TABLE runs (
    id                  TEXT NOT NULL,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model               TEXT NOT NULL DEFAULT '',
    pid                 INTEGER,
    started             DOUBLE PRECISION NOT NULL,
    ended               DOUBLE PRECISION,
    stop_reason         TEXT,
    error               TEXT,
    turns               INTEGER NOT NULL DEFAULT 0,
    input_tokens        BIGINT NOT NULL DEFAULT 0,
    output_tokens       BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens   BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens  BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens    BIGINT NOT NULL DEFAULT 0,
    requests            BIGINT NOT NULL DEFAULT 0,
    cost                DOUBLE PRECISION,
    PRIMARY KEY (session_id, id)
);

CREATE TABLE turns (
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id              TEXT NOT NULL,
    turn                INTEGER NOT NULL,
    created             DOUBLE PRECISION NOT NULL,
    input_tokens        BIGINT NOT NULL DEFAULT 0,
    output_tokens       BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens   BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens  BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens    BIGINT NOT NULL DEFAULT 0,
    requests            BIGINT NOT NULL DEFAULT 0,
    cost                DOUBLE PRECISION,
    PRIMARY KEY (session_id, run_id, turn)
);

CREATE TABLE events (
    id          BIGSERIAL PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL,
    created     DOUBLE PRECISION NOT NULL,
    type        TEXT NOT NULL,
    data        TEXT NOT NULL
);
CREATE INDEX events_by_session ON events(session_id, id);
"""

# v2: every model call of a run (`loopwright.events.ModelCallRecord`): what is queried in
# columns, the whole record (request, response, usage…) as JSON in `data`
_V2 = """
CREATE TABLE model_calls (
    id              BIGSERIAL PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id          TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    turn            INTEGER NOT NULL DEFAULT 0,
    purpose         TEXT NOT NULL,
    model           TEXT NOT NULL DEFAULT '',
    provider        TEXT NOT NULL DEFAULT '',
    started         DOUBLE PRECISION NOT NULL,
    latency         DOUBLE PRECISION NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    input_tokens    BIGINT NOT NULL DEFAULT 0,
    output_tokens   BIGINT NOT NULL DEFAULT 0,
    cost            DOUBLE PRECISION,
    error           TEXT,
    data            TEXT NOT NULL
);
CREATE INDEX model_calls_by_session ON model_calls(session_id, id);
"""

# v3: a session keeps the provider it ran against (never the key), so --resume reuses it
_V3 = """
ALTER TABLE sessions ADD COLUMN base_url TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN api_mode TEXT NOT NULL DEFAULT '';
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3]

SCHEMA_VERSION = len(MIGRATIONS)
MIGRATION_LOCK = 0x6C6F6F70  # pg_advisory_xact_lock key: one process migrates at a time
