"""The SQLite session store: one file in WAL mode, a message per row, FTS5 search, run leases.

A run's writes come in batches, one short transaction each (`write_batch`), with
`synchronous=NORMAL`: a commit costs no fsync in WAL mode, yet a process killed with SIGKILL keeps
every committed row. Only a power loss can take back the last few commits.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.errors import SessionError
from loopwright.messages import Message, Usage
from loopwright.store import Epoch, RunRecord, SessionInfo, StoreBusy, unique_prefix_match
from loopwright.store.audit import AuditEntry, audit_entries
from loopwright.store.calls import full_records, slim_event
from loopwright.store.lease import HOST, LEASE_SECONDS, lease_is_live
from loopwright.store.rows import (
    BATCH,
    CALL_RECORD,
    RUN_ON_CONFLICT,
    SESSION_COLUMNS,
    USAGE_COLUMNS,
    DamagedSession,
    call_at,
    checked_session_row,
    damaged_session_row,
    events_at,
    keyed_messages,
    readable,
    record_at,
    run_row,
)
from loopwright.store.schema import SCHEMA_VERSION, migrate
from loopwright.store.search import SNIPPET_END, SNIPPET_START, SearchHit, fts_query, hit_at
from loopwright.store.sqlite_rows import (
    IN_RANGE,
    NEXT_NUM,
    SessionRows,
    check_file,
    count_messages,
    delete_rows,
    index_all,
    key_range,
    session_runs,
    session_turns,
    text_or_bytes,
)
from loopwright.store.sqlite_tx import Transaction, Translating
from loopwright.store.turns import TURN_RECORD, run_totals
from loopwright.store.writes import (
    AppendMessages,
    Compact,
    OpenSession,
    RecordEvents,
    RecordRun,
    RecordTurn,
    ReleaseLease,
    StoreWrite,
    merged,
)

if TYPE_CHECKING:
    from loopwright.events import ModelCallRecord

TOUCH_SECONDS = 5.0  # a live run's session `updated` time is at most this stale
MAX_KEPT = 4096  # sessions whose keys `write_batch` keeps (forgotten all at once past it)


class SQLiteStore:
    """A blocking session store in one SQLite file; safe to share between threads and
    processes. Runs use it through `ThreadedStore` (one worker thread, never the event loop);
    the CLI uses it directly."""

    def __init__(self, path: str | Path, *, timeout: float = 5.0) -> None:
        self.path = str(path) if str(path) == ":memory:" else Path(path).expanduser()
        self.timeout = timeout
        self._lock = threading.RLock()
        self._touched: dict[str, float] = {}  # session id → when this process last set `updated`
        self._kept: dict[str, SessionRows] = {}  # a leased session's keys (`write_batch`)
        self._connection: sqlite3.Connection | None = self._open()

    @property
    def _db(self) -> sqlite3.Connection:
        """The open connection (read under `_lock`); after `close()`, the file opened again."""
        if self._connection is None:
            self._connection = self._open()
        return self._connection

    # -- connection, errors, migrations --

    def _open(self) -> sqlite3.Connection:
        if isinstance(self.path, Path):
            check_file(self.path)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SessionError(f"cannot create the session directory "
                                   f"{self.path.parent}: {exc}") from exc
        try:
            db = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None,
                                 check_same_thread=False)
        except sqlite3.Error as exc:
            raise SessionError(f"cannot open the session database {self.path}: {exc}") from exc
        db.text_factory = text_or_bytes
        try:
            with self._translate("opening"):
                db.execute("PRAGMA journal_mode=WAL").fetchone()
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("PRAGMA foreign_keys=ON")
                self._migrate(db)
        except SessionError:
            db.close()
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may won
            if version > SCHEMA_VERSION:
                raise SessionError(f"{self.path} has session schema v{version}, newer than this "
                                   f"loopwright understands (v{SCHEMA_VERSION}); upgrade it")
            if version == 0 and db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise SessionError(f"{self.path} is an SQLite database but not a loopwright "
                                   "session store; give another path")
            migrate(db, version)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _translate(self, action: str) -> contextlib.AbstractContextManager[None]:
        """Turn SQLite's errors into `SessionError`s that say what to do."""
        return Translating(self, action)

    def _translated(self, exc: BaseException, action: str) -> BaseException | None:
        """The `SessionError` (or `StoreBusy`) SQLite's error `exc` is raised as while `action`
        (None: not SQLite's, raised as it is)."""
        if isinstance(exc, sqlite3.OperationalError):
            text = str(exc)
            if "locked" in text or "busy" in text:
                return StoreBusy(
                    f"the session database {self.path} is locked by another process (waited "
                    f"{self.timeout:g}s while {action}); try again once it finishes")
            if any(words in text for words in _MISSING_SCHEMA):
                return SessionError(
                    f"{self.path} lacks part of the session schema ({text}): it was changed by "
                    "another program or is damaged; move it aside (a fresh one is created on "
                    "the next run) or give another path")
            return SessionError(f"session database {self.path}: {action} failed: {text}")
        if isinstance(exc, sqlite3.IntegrityError):  # a write the schema refuses: file sound
            return SessionError(f"session database {self.path}: {action} failed: {exc}; "
                                "nothing of it was stored (the file itself is not damaged)")
        if isinstance(exc, sqlite3.DatabaseError):
            return SessionError(
                f"{self.path} is not a loopwright session database or is corrupt ({exc}); move it "
                "aside (a fresh one is created on the next run) or give another path")
        return None

    @contextlib.contextmanager
    def _read(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._translate(action):
            yield self._db

    def _write(self, action: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One IMMEDIATE transaction (the write lock is taken up front, so no deadlock later)."""
        return Transaction(self, action)

    def close(self) -> None:
        """Release the file (and its -wal/-shm); a later call opens it again (an agent's
        store closed by `Agent.aclose()` serves its next run)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
                self._kept.clear()  # they hold the closed connection

    def message_count(self, session_id: str, *, epoch: int | None = None) -> int:
        """Messages in one epoch of the session (default: the live one)."""
        with self._read("counting messages") as db:
            return count_messages(db, session_id, epoch)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions --

    def create(self, session_id: str, *, model: str = "", cwd: str = "", title: str = "",
               parent_id: str | None = None, system_prompt: str | None = None) -> None:
        with self._write("creating a session") as db:
            _insert_session(db, session_id, parent_id=parent_id, title=title, model=model,
                            cwd=cwd, system_prompt=system_prompt, now=time.time())

    def update(self, session_id: str, **fields: Any) -> None:
        """Change `title`, `model`, `base_url`, `api_mode`, `cwd` or `system_prompt` of a
        session."""
        allowed = {"title", "model", "base_url", "api_mode", "cwd", "system_prompt"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update {', '.join(sorted(unknown))}")
        if not fields:
            return
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._write("updating a session") as db:
            db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?",
                       (*fields.values(), session_id))

    def get(self, session_id: str) -> SessionInfo | None:
        with self._read("reading a session") as db:
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?",
                             (session_id,)).fetchone()
            return None if row is None else self._info(db, row)

    def system_prompt(self, session_id: str) -> str | None:
        """The system prompt the session's latest run used."""
        with self._read("reading a session") as db:
            row = db.execute("SELECT system_prompt FROM sessions WHERE id = ?",
                             (session_id,)).fetchone()
        prompt = None if row is None else row[0]
        if prompt is not None and not isinstance(prompt, str):  # bytes: not UTF-8, or a BLOB
            raise damaged_session_row(session_id, "system_prompt", prompt)
        return prompt

    def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                      limit: int = 20, damaged: list[DamagedSession] | None = None
                      ) -> list[SessionInfo]:
        """The `limit` most recently updated sessions that can be read; each damaged one is
        skipped and reported into `damaged`, or as a `DamagedSessionWarning`."""
        where, params = [], []
        if cwd is not None:
            where.append("cwd = ?")
            params.append(cwd)
        if model is not None:
            where.append("model = ?")
            params.append(model)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self._read("listing sessions") as db:
            # no LIMIT: the cursor reads rows as they are taken, past any damaged ones
            rows = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions {clause} "
                              "ORDER BY updated DESC, rowid DESC", params)
            return readable(rows, lambda row: self._info(db, tuple(row)), limit, damaged)

    def resolve(self, prefix: str) -> str:
        """The one session id starting with `prefix`; `SessionError` if none or several do."""
        prefix = prefix.strip()
        if not prefix:
            raise SessionError("give a session id (or a unique prefix of one)")
        with self._read("looking up a session") as db:
            rows = db.execute("SELECT id FROM sessions WHERE id >= ? AND id < ? ORDER BY id "
                              "LIMIT 4", (prefix, prefix + "\U0010ffff")).fetchall()
        return unique_prefix_match(prefix, [r[0] for r in rows], str(self.path))

    def delete(self, session_id: str) -> None:
        """Remove a session with its messages, runs and events (refused while a run holds it)."""
        with self._write("deleting a session") as db:
            row = db.execute("SELECT lock_owner, lock_pid, lock_host, lock_expires FROM sessions "
                             "WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionError(f"no session {session_id!r}")
            if row[0] and lease_is_live(row[1], row[2], row[3]):
                raise SessionError(f"session {session_id} is in use by another run "
                                   f"(pid {row[1]}); stop it first")
            delete_rows(db, session_id)
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            self._kept.pop(session_id, None)

    def _info(self, db: sqlite3.Connection, row: tuple[Any, ...]) -> SessionInfo:
        (sid, parent_id, title, model, cwd, created, updated,
         lock_owner, lock_pid, lock_host, lock_expires, epoch, base_url, api_mode
         ) = checked_session_row(row)
        runs = session_runs(db, sid)
        usage, cost = run_totals(runs)
        count = count_messages(db, sid, epoch)
        live = bool(lock_owner) and lease_is_live(lock_pid, lock_host, lock_expires)
        stop_reason = None
        if runs:
            stop_reason = runs[-1]["stop_reason"] or ("running" if live else "interrupted")
        return SessionInfo(
            id=sid, parent_id=parent_id, title=title, model=model, base_url=base_url,
            api_mode=api_mode, cwd=cwd, created=created,
            updated=updated, stop_reason=stop_reason, usage=usage, message_count=count, epoch=epoch,
            cost=cost, runs=len(runs),
            locked_by=lock_pid if live else None)

    # -- messages --

    def load(self, session_id: str) -> list[Message]:
        return self.load_page(session_id)

    def append(self, session_id: str, message: Message) -> None:
        self.append_many(session_id, [message])

    def append_many(self, session_id: str, history: list[Message]) -> None:
        """Write several messages in one transaction."""
        if not history:
            return
        now = time.time()
        with self._write("writing messages") as db:
            self._rows_afresh(db, session_id).append(history, now)
            self._touch(db, session_id, now, always=True)

    def _rows_afresh(self, db: sqlite3.Connection, session_id: str) -> SessionRows:
        """The session's keys read in this transaction; those `write_batch` kept are
        forgotten, as this write moves them on."""
        self._kept.pop(session_id, None)
        return SessionRows(db, session_id)

    def _touch(self, db: sqlite3.Connection, session_id: str, now: float, *,
               always: bool = False) -> None:
        """Set the session's `updated` time: always, or (a run's batches) at most every
        TOUCH_SECONDS, since the update rewrites two indexes' pages in every transaction."""
        if always or now - self._touched.get(session_id, 0.0) >= TOUCH_SECONDS:
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
            self._touched[session_id] = now

    def index_messages(self) -> None:
        """Index for search every message not yet in the index (one statement for all)."""
        with self._write("indexing messages for search") as db:
            index_all(db)

    def compact(self, session_id: str, history: list[Message]) -> int:
        """Start the session's next epoch with `history`, in one transaction (a crash leaves
        either the old epoch or the whole new one); earlier epochs stay as the lineage."""
        with self._write("compacting a session") as db:
            return self._rows_afresh(db, session_id).compact(history, time.time())

    def lineage(self, session_id: str) -> list[Epoch]:
        """The session's epochs, oldest first (one per compaction, plus the live one)."""
        with self._read("reading a session's lineage") as db:
            rows = db.execute("SELECT epoch, count(*), min(created), max(created) FROM messages "
                              f"WHERE {IN_RANGE} GROUP BY epoch ORDER BY epoch",
                              key_range(db, session_id)).fetchall()
        return [Epoch(epoch=r[0], messages=r[1], first=r[2], last=r[3]) for r in rows]

    def load_page(self, session_id: str, *, epoch: int | None = None, offset: int = 0,
                  limit: int | None = None) -> list[Message]:
        """Part of one epoch (default: the live one) in order, without reading the rest."""
        with self._read("loading a session") as db:
            rows = db.execute(f"SELECT id - ?1, session_id, seq, role, content, data FROM "
                              f"messages WHERE {IN_RANGE} AND epoch = {_EPOCH} ORDER BY id "
                              "LIMIT ?5 OFFSET ?6",
                              (*key_range(db, session_id), epoch, session_id,
                               -1 if limit is None else limit, offset)).fetchall()
        return keyed_messages(session_id, rows)

    def children(self, session_id: str) -> list[SessionInfo]:
        """Sessions of the sub-agents this session delegated to, oldest first."""
        with self._read("listing sub-agent sessions") as db:
            rows = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_id = ? "
                              "ORDER BY created, rowid", (session_id,)).fetchall()
            return [self._info(db, row) for row in rows]

    # -- the write lease of a run --

    def acquire(self, session_id: str, owner: str) -> None:
        with self._write("locking a session") as db:
            _take_lease(db, session_id, owner)

    def open_session(self, session_id: str, owner: str, *, model: str = "", cwd: str = "",
                     title: str = "", parent_id: str | None = None,
                     system_prompt: str | None = None, base_url: str = "",
                     api_mode: str = "") -> bool:
        """A run's opening in one transaction: the session created unless it exists (with
        these fields), then its write lease taken for `owner` (as `acquire`: `SessionError`
        while another live run holds it, and nothing is created then). Whether the session
        existed before."""
        now = time.time()
        with self._write("opening a session") as db:
            return not self._open_in(db, session_id, owner, now, parent_id=parent_id,
                                     title=title, model=model, cwd=cwd,
                                     system_prompt=system_prompt, base_url=base_url,
                                     api_mode=api_mode)

    def _open_in(self, db: sqlite3.Connection, session_id: str, owner: str, now: float,
              **fields: Any) -> bool:
        """`open_session` inside the caller's transaction; whether this made the session."""
        created = _insert_session(db, session_id, now=now, **fields)
        _take_lease(db, session_id, owner)
        if created:  # just set: the run's first write need not set it again
            self._touched[session_id] = now
        return created

    def renew(self, session_id: str, owner: str) -> None:
        with self._lock, self._translate("renewing a session lease"):
            changed = self._db.execute(
                "UPDATE sessions SET lock_expires = ? WHERE id = ? AND lock_owner = ?",
                (time.time() + LEASE_SECONDS, session_id, owner)).rowcount
        if not changed:
            raise SessionError(f"session {session_id}: this run lost its lease to another run")

    def release(self, session_id: str, owner: str) -> None:
        with self._lock, self._translate("unlocking a session"):
            self._db.execute(_RELEASE, (session_id, owner))

    # -- runs and events --

    def record_run(self, session_id: str, record: RunRecord, *, model: str = "",
                   ended: bool = False) -> None:
        with self._lock, self._translate("recording a run"):
            self._db.execute(_UPSERT_RUN, run_row(session_id, record, model, ended,
                                                   time.time()))

    def record_turn(self, session_id: str, run_id: str, turn: int, usage: Usage,
                    cost: float | None) -> None:
        """Store a turn's record (it replaces what the turn's `turn_end` event says)."""
        # one transaction: the key is read from the newest stored, then taken
        with self._write("recording a turn") as db:
            self._rows_afresh(db, session_id).turn(run_id, turn, usage, cost, time.time())

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        """What each turn of the session's runs spent, in order, as dicts of the columns the
        v7 table had: read from the runs' `turn_end` events (`store/turns.py`)."""
        with self._read("reading turns") as db:
            return session_turns(db, session_id)

    def runs(self, session_id: str) -> list[dict[str, Any]]:
        """The session's runs, oldest first, as dicts of their columns (a run that has not
        ended with its totals so far, from its turns)."""
        with self._read("reading runs") as db:
            return session_runs(db, session_id)

    def record_events(self, session_id: str, run_id: str, events: list[dict[str, Any]]) -> None:
        if events:
            with self._write("recording events") as db:
                self._rows_afresh(db, session_id).events(run_id, events, time.time())

    def write_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> None:
        """Several of a run's writes (`store/writes.py`) in one transaction, in order. Nothing
        is indexed for search here: `search` catches the index up first (`index_messages`).

        A session's keys are kept from one batch to its next (`_kept`), so a steady turn does
        not read them again: while a run holds the session's lease nobody else writes its
        rows. If someone did (a lease lost, another connection), a kept key is taken already
        and the batch fails on it; it is written again with the keys read afresh."""
        with self._lock:  # a failed batch's keys are forgotten before any other batch runs
            again = session_id in self._kept  # a kept key may have been taken: one more try
            while True:
                try:
                    self._write_batch(session_id, writes)
                    return
                except BaseException as exc:
                    self._kept.pop(session_id, None)
                    if not (again and isinstance(exc, SessionError)
                            and isinstance(exc.__cause__, sqlite3.IntegrityError)):
                        raise
                    again = False

    def _write_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> None:
        now = time.time()
        batch = merged(writes)
        with self._write("writing a run's records") as db:
            opening = batch[0] if batch and isinstance(batch[0], OpenSession) else None
            if opening is not None:  # a new session's first write (merged puts it first)
                self._open_in(db, session_id, opening.owner, now, **opening.fields)
            rows = self._kept.get(session_id)
            if rows is None:
                rows = SessionRows(db, session_id)
                if len(self._kept) >= MAX_KEPT:
                    self._kept.clear()
                self._kept[session_id] = rows
            for write in batch:
                if isinstance(write, AppendMessages):
                    rows.append(write.messages, now)
                    self._touch(db, session_id, now)
                elif isinstance(write, RecordEvents):
                    rows.events(write.run_id, write.events, now)
                elif isinstance(write, Compact):
                    rows.compact(write.messages, now)
                elif isinstance(write, RecordRun):
                    db.execute(_UPSERT_RUN, run_row(session_id, write.record, write.model,
                                                     write.ended, now))
                    if write.ended:
                        self._touch(db, session_id, now, always=True)
                elif isinstance(write, ReleaseLease):
                    db.execute(_RELEASE, (session_id, write.owner))
                    del self._kept[session_id]  # others may write the session from now on
                elif isinstance(write, RecordTurn):
                    rows.turn(write.run_id, write.turn, write.usage, write.cost, now)

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """The stored events of a session in order; each has `run_id` and `created` added (a
        `model_call` event without its record's request and response: `model_calls`)."""
        with self._read("reading events") as db:
            rows = db.execute(f"SELECT run_id, created, data FROM events WHERE {IN_RANGE} "
                              "AND type NOT IN (?3, ?4) ORDER BY id",
                              (*key_range(db, session_id), CALL_RECORD, TURN_RECORD)).fetchall()
        return [slim_event(event) for row in rows for event in events_at(session_id, *row)]

    def audit(self, session_id: str) -> list[AuditEntry]:
        """Every tool call of the session: arguments, result size, duration, error, decision."""
        return audit_entries(session_id, self.events(session_id))

    def model_calls(self, session_id: str) -> list[ModelCallRecord]:
        """Every model call of the session's runs, in order, as recorded."""
        with self._read("reading model calls") as db:
            rows = db.execute(f"SELECT run_id, created, type, data FROM events WHERE {IN_RANGE} "
                              "AND type IN (?3, ?4, 'model_call') ORDER BY id",
                              (*key_range(db, session_id), BATCH, CALL_RECORD)).fetchall()
        calls = []
        for run_id, created, kind, data in rows:
            if kind == CALL_RECORD:  # written before schema v7
                calls.append(call_at(session_id, data))
            else:
                calls += [record_at(session_id, record) for record in
                          full_records(events_at(session_id, run_id, created, data))]
        return calls

    def latest(self, *, cwd: str | None = None) -> SessionInfo | None:
        """The most recently updated session (in `cwd`, if given)."""
        found = self.list_sessions(cwd=cwd, limit=1)
        return found[0] if found else None

    # -- search --

    def search(self, text: str, *, limit: int = 10, any_word: bool = False,
               exclude_session: str | None = None, cwd: str | None = None,
               damaged: list[DamagedSession] | None = None) -> list[SearchHit]:
        """Messages matching `text` (every word, or any word), best BM25 score first; a damaged
        one is skipped and reported as `list_sessions` does."""
        query = fts_query(text, any_word=any_word)
        if not query:
            return []
        with contextlib.suppress(SessionError):  # read-only or busy: search what is indexed
            self.index_messages()
        where = ["messages_fts MATCH ?"]
        params: list[Any] = [query]
        if exclude_session is not None:
            where.append("m.session_id != ?")
            params.append(exclude_session)
        if cwd is not None:
            where.append("s.cwd = ?")
            params.append(cwd)
        sql = (
            "SELECT m.session_id, m.seq, m.role, snippet(messages_fts, 0, ?, ?, '…', 16), "
            "bm25(messages_fts), s.title, s.updated FROM messages_fts "
            "JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY bm25(messages_fts)")
        with self._read("searching") as db:
            return readable(db.execute(sql, (SNIPPET_START, SNIPPET_END, *params)),
                            lambda r: hit_at(r[0], r[1], r[2], r[3], r[5], r[6], score=r[4]),
                            limit, damaged)


_UPSERT_RUN = (
    "INSERT INTO runs (id, session_id, model, pid, started, ended, stop_reason, error, turns, "
    + ", ".join(USAGE_COLUMNS) + ", cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    + RUN_ON_CONFLICT)


_RELEASE = ("UPDATE sessions SET lock_owner = NULL, lock_pid = NULL, lock_host = NULL, "
            "lock_expires = NULL WHERE id = ? AND lock_owner = ?")


def _insert_session(db: sqlite3.Connection, session_id: str, *, parent_id: str | None,
                    title: str, model: str, cwd: str, system_prompt: str | None, now: float,
                    base_url: str = "", api_mode: str = "") -> bool:
    """Create the session's row unless it exists (inside the caller's transaction); whether
    this made it."""
    return db.execute(
        "INSERT OR IGNORE INTO sessions (id, parent_id, title, model, cwd, system_prompt, "
        f"base_url, api_mode, created, updated, num, live_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
        f"?, ?, {NEXT_NUM}, 1)",
        (session_id, parent_id, title, model, cwd, system_prompt, base_url, api_mode,
         now, now)).rowcount > 0


def _take_lease(db: sqlite3.Connection, session_id: str, owner: str) -> None:
    """Take the session's write lease for `owner` (inside the caller's transaction)."""
    row = db.execute("SELECT lock_owner, lock_pid, lock_host, lock_expires FROM sessions "
                     "WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionError(f"no session {session_id!r} to lock; create it first")
    holder, pid, host, expires = row
    if holder and holder != owner and lease_is_live(pid, host, expires):
        where = "" if host == HOST else f" on {host}"
        raise SessionError(f"session {session_id} is in use by another run "
                           f"(pid {pid}{where})")
    db.execute("UPDATE sessions SET lock_owner = ?, lock_pid = ?, lock_host = ?, "
               "lock_expires = ? WHERE id = ?",
               (owner, os.getpid(), HOST, time.time() + LEASE_SECONDS, session_id))


# what SQLite says of a table or column the statement needs and the file lacks
_MISSING_SCHEMA = ("no such table", "no such column", "has no column named")

# `?3`: an epoch, or None for the live one of session `?4`
_EPOCH = "coalesce(?3, (SELECT epoch FROM sessions WHERE id = ?4))"
