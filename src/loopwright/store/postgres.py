"""The PostgreSQL session store, for many workers on many machines sharing one database.

`Agent(store="postgresql://user@host/db")` (needs `pip install loopwright[postgres]`). Async
throughout (psycopg 3); every statement commits on its own (or one transaction for several
rows), so a worker killed with SIGKILL keeps every message it wrote. The schema is created and
migrated on first use, under an advisory lock so that workers starting together do not race.

The lease that keeps two runs off one session is the session row's `lock_*` columns, taken under
`SELECT … FOR UPDATE` with an expiry on the database's clock: a worker on another machine that
dies frees the session when its lease expires (one on this host frees it at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from loopwright.errors import ConfigError, SessionError
from loopwright.messages import Message, Usage
from loopwright.store import Epoch, RunRecord, SessionInfo, StoreBusy, unique_prefix_match
from loopwright.store.audit import AuditEntry, audit_entries
from loopwright.store.calls import CALL_COLUMNS, split_model_call
from loopwright.store.lease import HOST, LEASE_SECONDS, lease_is_live
from loopwright.store.postgres_batch import one_statement
from loopwright.store.postgres_schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION
from loopwright.store.rows import (
    RUN_ON_CONFLICT,
    SESSION_COLUMNS,
    TURN_ON_CONFLICT,
    USAGE_COLUMNS,
    DamagedSession,
    call_at,
    checked_runs,
    checked_session_row,
    events_at,
    events_row,
    keyed_messages,
    message_row,
    readable_page,
    run_row,
    storable_value,
    turn_row,
)
from loopwright.store.search import (
    SNIPPET_END,
    SNIPPET_START,
    SearchHit,
    hit_at,
    search_words,
)
from loopwright.store.turns import run_totals, running, with_running_totals
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
    with_turns,
)

if TYPE_CHECKING:
    import psycopg

    from loopwright.events import ModelCallRecord

_Read = TypeVar("_Read")  # what `_readable` makes of a row
_USAGE = USAGE_COLUMNS
_UPSERT_RUN = (
    "INSERT INTO runs (id, session_id, model, pid, started, ended, stop_reason, error, turns, "
    + ", ".join(_USAGE) + ", cost) VALUES (" + ", ".join(["%s"] * 16) + ") " + RUN_ON_CONFLICT)
_UPSERT_TURN = (
    "INSERT INTO turns (session_id, run_id, turn, created, " + ", ".join(_USAGE) + ", cost) "
    "VALUES (" + ", ".join(["%s"] * 11) + ") " + TURN_ON_CONFLICT)
# a session's row unless it exists (its `created` and `updated` the same time)
_INSERT_SESSION = ("INSERT INTO sessions (id, parent_id, title, model, cwd, system_prompt, "
                   "base_url, api_mode, created, updated) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                   "%s, %s, %s) ON CONFLICT (id) DO NOTHING")
_INSERT_EVENT = ("INSERT INTO events (session_id, run_id, created, type, data) VALUES "
                 "(%s, %s, %s, %s, %s)")
_NOW = "extract(epoch from clock_timestamp())"
_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, seq, epoch, role, content, data, created) VALUES "
    "(%(sid)s, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = %(sid)s), "
    "(SELECT epoch FROM sessions WHERE id = %(sid)s), %(role)s, %(content)s, %(data)s, "
    "%(now)s)")
_INSERT_CALL = (f"INSERT INTO model_calls (session_id, {', '.join(CALL_COLUMNS)}) VALUES "
                f"({', '.join(['%s'] * (len(CALL_COLUMNS) + 1))})")
LOCK_TIMEOUT_MS = 2000  # a row lock held longer surfaces as StoreBusy (the recorder waits on)


class PostgresStore:
    """A `SessionStore` in a PostgreSQL database (one connection per event loop using it)."""

    opens_in_batch = True  # `write_batch` takes a new session's `OpenSession` (recorder.py)

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._connections: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[psycopg.AsyncConnection[Any], asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"PostgresStore({_redacted(self.dsn)!r})"

    # -- connection, errors, migrations --

    async def _connection(self) -> tuple[psycopg.AsyncConnection[Any], asyncio.Lock]:
        loop = asyncio.get_running_loop()
        found = self._connections.get(loop)
        if found is not None and not found[0].closed:
            return found
        try:
            import psycopg
        except ImportError as exc:
            raise ConfigError("a postgresql:// store needs psycopg: pip install "
                              "'loopwright[postgres]'") from exc
        try:
            conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        except psycopg.Error as exc:
            raise SessionError(f"cannot connect to the session database "
                               f"{_redacted(self.dsn)}: {_first_line(exc)}") from exc
        try:
            await conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
            await self._migrate(conn)
        except BaseException:
            await conn.close()  # each later call opens its own again, and is told the same
            raise
        found = (conn, asyncio.Lock())
        self._connections[loop] = found
        return found

    async def _migrate(self, conn: psycopg.AsyncConnection[Any]) -> None:
        import psycopg

        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS loopwright_schema "
                               "(version INTEGER NOT NULL)")
            row = await (await conn.execute("SELECT max(version) FROM loopwright_schema")
                         ).fetchone()
            version = (row[0] if row else None) or 0
            if version > SCHEMA_VERSION:
                raise SessionError(f"{_redacted(self.dsn)} has session schema v{version}, newer "
                                   f"than this loopwright understands (v{SCHEMA_VERSION}); "
                                   "upgrade it")
            try:  # tables that are not the version's (a version of -1, another program's)
                if version < 0:
                    raise ValueError("no version loopwright writes")
                for script in MIGRATIONS[version:]:
                    await conn.execute(script.encode())  # several statements, no parameters
            except (psycopg.Error, ValueError) as exc:
                raise SessionError(
                    f"{_redacted(self.dsn)}: its session schema says v{version}, but its tables "
                    f"are not that version's ({_first_line(exc)}), so it was not written by "
                    "loopwright as it is; give another database") from None
            if version < SCHEMA_VERSION:
                await conn.execute("DELETE FROM loopwright_schema")
                await conn.execute("INSERT INTO loopwright_schema VALUES (%s)",
                                   (SCHEMA_VERSION,))

    @contextlib.asynccontextmanager
    async def _db(self, action: str, *, transaction: bool = False, pipeline: bool = False
                  ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """The connection, its statements serialised; psycopg errors become `SessionError`s
        (`StoreBusy` for lock timeouts and lost connections: worth another try). `pipeline`:
        the transaction's statements are sent together and answered together, one round trip
        in all (where libpq supports pipeline mode), rather than one per statement."""
        import psycopg

        conn, lock = await self._connection()
        async with lock:
            try:
                if pipeline and psycopg.Pipeline.is_supported():
                    async with conn.pipeline(), conn.transaction():
                        yield conn
                elif transaction or pipeline:
                    async with conn.transaction():
                        yield conn
                else:
                    yield conn
            except psycopg.errors.LockNotAvailable as exc:
                raise StoreBusy(f"the session database is locked (waited "
                                f"{LOCK_TIMEOUT_MS / 1000:g}s while {action})") from exc
            except psycopg.OperationalError as exc:
                with contextlib.suppress(psycopg.Error):
                    await conn.close()  # the next call reconnects
                raise StoreBusy(f"lost the session database while {action}: "
                                f"{_first_line(exc)}") from exc
            except psycopg.Error as exc:
                raise SessionError(f"session database: {action} failed: "
                                   f"{_first_line(exc)}") from exc

    async def _rows(self, action: str, sql: str, params: Sequence[Any] | dict[str, Any] = ()
                    ) -> list[tuple[Any, ...]]:
        async with self._db(action) as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall() if cursor.description else []

    async def aclose(self) -> None:
        """Close this loop's connection once the statement in flight (a run's last write in
        the background) is done: closing under it crashes psycopg."""
        found = self._connections.pop(asyncio.get_running_loop(), None)
        if found is not None:
            conn, lock = found
            async with lock:
                await conn.close()

    # -- sessions --

    async def create(self, session_id: str, *, model: str = "", cwd: str = "", title: str = "",
                     parent_id: str | None = None, system_prompt: str | None = None) -> None:
        now = time.time()
        await self._rows("creating a session", _INSERT_SESSION, _session_values(
            session_id, parent_id, title, model, cwd, system_prompt, "", "", now, now))

    async def update(self, session_id: str, **fields: Any) -> None:
        unknown = set(fields) - {"title", "model", "base_url", "api_mode", "cwd", "system_prompt"}
        if unknown:
            raise ValueError(f"cannot update {', '.join(sorted(unknown))}")
        if fields:
            assignments = ", ".join(f"{name} = %s" for name in fields)
            await self._rows("updating a session",
                             f"UPDATE sessions SET {assignments} WHERE id = %s",
                             _session_values(*fields.values(), session_id))

    async def get(self, session_id: str) -> SessionInfo | None:
        rows = await self._rows("reading a session", f"SELECT {SESSION_COLUMNS} FROM sessions "
                                "WHERE id = %s", (session_id,))
        return await self._info(rows[0]) if rows else None

    async def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                            limit: int = 20, damaged: list[DamagedSession] | None = None
                            ) -> list[SessionInfo]:
        """The `limit` most recently updated sessions that can be read; each damaged one is
        skipped and reported into `damaged`, or as a `DamagedSessionWarning`."""
        return await self._readable(
            "listing sessions", f"SELECT {SESSION_COLUMNS} FROM sessions WHERE "
            "(%(cwd)s::text IS NULL OR cwd = %(cwd)s) AND "
            "(%(model)s::text IS NULL OR model = %(model)s) "
            "ORDER BY updated DESC, created DESC, id LIMIT %(limit)s OFFSET %(offset)s",
            {"cwd": storable_value(cwd), "model": storable_value(model)}, self._info, limit,
            damaged)

    async def _readable(self, action: str, sql: str, params: dict[str, Any],
                           read: Callable[[tuple[Any, ...]], Awaitable[_Read]], limit: int,
                           damaged: list[DamagedSession] | None) -> list[_Read]:
        """The first `limit` rows of `sql` (ending in `LIMIT %(limit)s OFFSET %(offset)s`, its
        first column the session's id) that `read` can read: a damaged one is skipped and
        reported, and the rows after it read a page at a time."""
        found: list[_Read] = []
        offset = 0
        while len(found) < limit:
            wanted = limit - len(found)
            rows = await self._rows(action, sql, {**params, "limit": wanted, "offset": offset})
            found += await readable_page(rows, read, damaged)
            if len(rows) < wanted:
                break
            offset += len(rows)
        return found

    async def children(self, session_id: str) -> list[SessionInfo]:
        rows = await self._rows("listing sub-agent sessions", f"SELECT {SESSION_COLUMNS} FROM "
                                "sessions WHERE parent_id = %s ORDER BY created", (session_id,))
        return [await self._info(row) for row in rows]

    async def _info(self, row: tuple[Any, ...]) -> SessionInfo:
        (sid, parent_id, title, model, cwd, created, updated,
         lock_owner, lock_pid, lock_host, lock_expires, epoch, base_url, api_mode
         ) = checked_session_row(row)
        runs = await self.runs(sid)
        usage, cost = run_totals(runs)
        count = (await self._rows("reading a session", "SELECT count(*) FROM messages WHERE "
                                  "session_id = %s AND epoch = %s", (sid, epoch)))[0][0]
        live = bool(lock_owner) and lease_is_live(lock_pid, lock_host, lock_expires)
        stop_reason = None
        if runs:
            stop_reason = runs[-1]["stop_reason"] or ("running" if live else "interrupted")
        return SessionInfo(
            id=sid, parent_id=parent_id, title=title, model=model, base_url=base_url,
            api_mode=api_mode, cwd=cwd, created=created,
            updated=updated, stop_reason=stop_reason, message_count=int(count), epoch=epoch,
            usage=usage, cost=cost, runs=len(runs),
            locked_by=lock_pid if live else None)

    async def delete(self, session_id: str) -> None:
        async with self._db("deleting a session", transaction=True) as conn:
            row = await (await conn.execute(
                "SELECT lock_owner, lock_pid, lock_host, lock_expires FROM sessions WHERE id = %s "
                "FOR UPDATE", (session_id,))).fetchone()
            if row is None:
                raise SessionError(f"no session {session_id!r}")
            if row[0] and lease_is_live(row[1], row[2], row[3]):
                raise SessionError(f"session {session_id} is in use by another run "
                                   f"(pid {row[1]} on {row[2]}); stop it first")
            await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))

    async def latest(self, *, cwd: str | None = None) -> SessionInfo | None:
        found = await self.list_sessions(cwd=cwd, limit=1)
        return found[0] if found else None

    async def resolve(self, prefix: str) -> str:
        """The one session id starting with `prefix`; `SessionError` if none or several do."""
        prefix = prefix.strip()
        if not prefix:
            raise SessionError("give a session id (or a unique prefix of one)")
        rows = await self._rows("looking up a session", "SELECT id FROM sessions WHERE "
                                "starts_with(id, %s) ORDER BY id LIMIT 4", (prefix,))
        return unique_prefix_match(prefix, [r[0] for r in rows], _redacted(self.dsn))

    async def system_prompt(self, session_id: str) -> str | None:
        rows = await self._rows("reading a session", "SELECT system_prompt FROM sessions "
                                "WHERE id = %s", (session_id,))
        return rows[0][0] if rows else None

    # -- messages --

    async def message_count(self, session_id: str, *, epoch: int | None = None) -> int:
        rows = await self._rows(
            "counting messages", "SELECT count(*) FROM messages WHERE session_id = %(sid)s AND "
            "epoch = coalesce(%(epoch)s::int, (SELECT epoch FROM sessions WHERE id = %(sid)s))",
            {"sid": session_id, "epoch": epoch})
        return int(rows[0][0])

    async def load_page(self, session_id: str, *, epoch: int | None = None, offset: int = 0,
                        limit: int | None = None) -> list[Message]:
        """Part of one epoch (default: the live one) in order, without reading the rest."""
        rows = await self._rows(
            "loading a session", "SELECT seq, session_id, seq, role, content, data FROM messages "
            "WHERE session_id = %(sid)s AND epoch = coalesce(%(epoch)s::int, (SELECT epoch FROM "
            "sessions WHERE id = %(sid)s)) ORDER BY seq LIMIT %(limit)s OFFSET %(offset)s",
            {"sid": session_id, "epoch": epoch, "limit": limit, "offset": offset})
        return keyed_messages(session_id, rows)

    async def load(self, session_id: str) -> list[Message]:
        return await self.load_page(session_id)

    async def append(self, session_id: str, message: Message) -> None:
        await self.append_many(session_id, [message])

    async def append_many(self, session_id: str, history: list[Message]) -> None:
        if history:
            async with self._db("writing messages", transaction=True) as conn:
                await self._insert(conn, session_id, history, time.time())

    async def compact(self, session_id: str, history: list[Message]) -> int:
        async with self._db("compacting a session", transaction=True) as conn:
            epoch = await _next_epoch(conn, session_id)
            await self._insert(conn, session_id, history, time.time())
        return epoch

    @staticmethod
    async def _insert(conn: psycopg.AsyncConnection[Any], session_id: str,
                      history: list[Message], now: float) -> None:
        rows = [dict(zip(("role", "content", "data"), message_row(m), strict=True),
                     sid=session_id, now=now) for m in history]
        async with conn.cursor() as cursor:  # row after row: each seq follows the one before
            await cursor.executemany(_INSERT_MESSAGE, rows)
            await cursor.execute("UPDATE sessions SET updated = %s WHERE id = %s",
                                 (now, session_id))

    async def lineage(self, session_id: str) -> list[Epoch]:
        rows = await self._rows("reading a session's lineage",
                                "SELECT epoch, count(*), min(created), max(created) FROM "
                                "messages WHERE session_id = %s GROUP BY epoch ORDER BY epoch",
                                (session_id,))
        return [Epoch(epoch=r[0], messages=int(r[1]), first=r[2], last=r[3]) for r in rows]

    # -- the write lease --

    async def acquire(self, session_id: str, owner: str) -> None:
        async with self._db("locking a session", transaction=True) as conn:
            await _take_lease(conn, session_id, owner)

    async def open_session(self, session_id: str, owner: str, *, model: str = "", cwd: str = "",
                           title: str = "", parent_id: str | None = None,
                           system_prompt: str | None = None, base_url: str = "",
                           api_mode: str = "") -> bool:
        """A run's opening in one transaction: the session created unless it exists, then its
        lease taken (see `SQLiteStore.open_session`). Whether the session existed before."""
        async with self._db("opening a session", transaction=True) as conn:
            return not await _open(conn, session_id, owner, time.time(), parent_id=parent_id,
                                   title=title, model=model, cwd=cwd,
                                   system_prompt=system_prompt, base_url=base_url,
                                   api_mode=api_mode)

    async def renew(self, session_id: str, owner: str) -> None:
        async with self._db("renewing a session lease") as conn:
            cursor = await conn.execute(f"UPDATE sessions SET lock_expires = {_NOW} + %s "
                                        "WHERE id = %s AND lock_owner = %s",
                                        (LEASE_SECONDS, session_id, owner))
            changed = cursor.rowcount
        if not changed:
            raise SessionError(f"session {session_id}: this run lost its lease to another run")

    async def release(self, session_id: str, owner: str) -> None:
        await self._rows("unlocking a session", _RELEASE, (session_id, owner))

    # -- runs, turns, events --

    async def record_run(self, session_id: str, record: RunRecord, *, model: str = "",
                         ended: bool = False) -> None:
        await self._rows("recording a run", _UPSERT_RUN,
                         run_row(session_id, record, model, ended, time.time()))

    async def runs(self, session_id: str) -> list[dict[str, Any]]:
        """The session's runs, oldest first (a run that has not ended with its totals so far,
        from its turns: `store/turns.py`)."""
        runs = checked_runs(session_id, await self._dicts(
            "reading runs", "SELECT * FROM runs WHERE session_id = %s ORDER BY started",
            session_id))
        return (with_running_totals(runs, await self.turns(session_id)) if running(runs)
                else runs)

    async def record_turn(self, session_id: str, run_id: str, turn: int, usage: Usage,
                          cost: float | None) -> None:
        await self._rows("recording a turn", _UPSERT_TURN,
                         turn_row(session_id, run_id, turn, usage, cost, time.time()))

    async def turns(self, session_id: str) -> list[dict[str, Any]]:
        return await self._dicts("reading turns", "SELECT * FROM turns WHERE session_id = %s "
                                 "ORDER BY created, turn", session_id)

    async def record_events(self, session_id: str, run_id: str,
                            events: list[dict[str, Any]]) -> None:
        if not events:
            return
        now = time.time()
        async with self._db("recording events", transaction=True) as conn:
            for turn in with_turns([RecordEvents(run_id=run_id, events=events)]):
                if isinstance(turn, RecordTurn):  # a turn_end event's row of `turns`
                    await conn.execute(_UPSERT_TURN, turn_row(
                        session_id, run_id, turn.turn, turn.usage, turn.cost, now))
            await _insert_events(conn, session_id, run_id, events, now)

    async def write_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> None:
        """Several of a run's writes (`store/writes.py`) in one transaction, in order."""
        now = time.time()
        batch = with_turns(merged(writes))
        statement = one_statement(session_id, batch, now)
        if statement is not None:  # as a rule: one statement, atomic on its own
            import psycopg

            async with self._db("writing a run's records") as conn, \
                    psycopg.AsyncRawCursor(conn) as cursor:  # `$n` placeholders, as they are
                await cursor.execute(statement[0], statement[1])
            return
        async with self._db("writing a run's records", pipeline=True) as conn:
            for write in batch:
                if isinstance(write, OpenSession):  # a new session's first write
                    await _open(conn, session_id, write.owner, now, **write.fields)
                elif isinstance(write, AppendMessages):
                    await self._insert(conn, session_id, write.messages, now)
                elif isinstance(write, Compact):
                    await _next_epoch(conn, session_id)
                    await self._insert(conn, session_id, write.messages, now)
                elif isinstance(write, RecordEvents):
                    await _insert_events(conn, session_id, write.run_id, write.events, now)
                elif isinstance(write, RecordRun):
                    await conn.execute(_UPSERT_RUN, run_row(session_id, write.record,
                                                            write.model, write.ended, now))
                elif isinstance(write, ReleaseLease):
                    await conn.execute(_RELEASE, (session_id, write.owner))
                else:
                    await conn.execute(_UPSERT_TURN, turn_row(
                        session_id, write.run_id, write.turn, write.usage, write.cost, now))

    async def events(self, session_id: str) -> list[dict[str, Any]]:
        rows = await self._rows("reading events", "SELECT run_id, created, data FROM events "
                                "WHERE session_id = %s ORDER BY id", (session_id,))
        return [event for row in rows for event in events_at(session_id, *row)]

    async def audit(self, session_id: str) -> list[AuditEntry]:
        """Every tool call of the session: arguments, result size, duration, error, decision."""
        return audit_entries(session_id, await self.events(session_id))

    async def model_calls(self, session_id: str) -> list[ModelCallRecord]:
        """Every model call of the session's runs, in order, as recorded."""
        rows = await self._rows("reading model calls", "SELECT data FROM model_calls "
                                "WHERE session_id = %s ORDER BY id", (session_id,))
        return [call_at(session_id, data) for (data,) in rows]

    async def _dicts(self, action: str, sql: str, session_id: str) -> list[dict[str, Any]]:
        async with self._db(action) as conn:
            cursor = await conn.execute(sql, (session_id,))
            names = [d.name for d in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]

    # -- search --

    async def search(self, text: str, *, limit: int = 10, any_word: bool = False,
                     exclude_session: str | None = None, cwd: str | None = None,
                     damaged: list[DamagedSession] | None = None) -> list[SearchHit]:
        """Messages matching `text` (every word, or any word), best `ts_rank` first; a damaged
        one is skipped and reported as `list_sessions` does."""
        words = search_words(text)
        if not words:
            return []
        query = (" | " if any_word else " & ").join(words)  # \w+ only: no tsquery syntax
        async def hit(r: tuple[Any, ...]) -> SearchHit:
            return hit_at(r[0], r[1], r[2], r[3].replace("<<<", SNIPPET_START).replace(
                ">>>", SNIPPET_END), r[5], r[6], score=-float(r[4]))

        return await self._readable(
            "searching",
            "SELECT m.session_id, m.seq, m.role, ts_headline('english', m.content, q, "
            "'StartSel=<<<, StopSel=>>>, MaxWords=16, MinWords=4'), ts_rank(m.search, q), "
            "s.title, s.updated FROM messages m JOIN sessions s ON s.id = m.session_id, "
            "to_tsquery('english', %(query)s) q WHERE m.search @@ q "
            "AND (%(exclude)s::text IS NULL OR m.session_id <> %(exclude)s) "
            "AND (%(cwd)s::text IS NULL OR s.cwd = %(cwd)s) "
            "ORDER BY ts_rank(m.search, q) DESC, m.id LIMIT %(limit)s OFFSET %(offset)s",
            {"query": query, "exclude": storable_value(exclude_session),
             "cwd": storable_value(cwd)}, hit, limit, damaged)


def _session_values(*values: Any) -> tuple[Any, ...]:
    """A session row's values as PostgreSQL's text holds them: a prompt (the title), a system
    prompt or a model name may hold NUL, which text refuses and which would stop the run; the
    exact text is in the messages (`rows.storable`)."""
    return tuple(storable_value(value) for value in values)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _redacted(dsn: str) -> str:
    """The DSN without its password (it appears in errors and reprs)."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", dsn)


_RELEASE = ("UPDATE sessions SET lock_owner = NULL, lock_pid = NULL, lock_host = NULL, "
            "lock_expires = NULL WHERE id = %s AND lock_owner = %s")


async def _open(conn: psycopg.AsyncConnection[Any], session_id: str, owner: str, now: float, *,
                parent_id: str | None = None, title: str = "", model: str = "", cwd: str = "",
                system_prompt: str | None = None, base_url: str = "", api_mode: str = ""
                ) -> bool:
    """`open_session` inside the caller's transaction; whether this made the session."""
    created = (await conn.execute(_INSERT_SESSION, _session_values(
        session_id, parent_id, title, model, cwd, system_prompt, base_url, api_mode, now,
        now))).rowcount
    await _take_lease(conn, session_id, owner)
    return bool(created)


async def _take_lease(conn: psycopg.AsyncConnection[Any], session_id: str, owner: str) -> None:
    """Take the session's write lease for `owner` (inside the caller's transaction)."""
    row = await (await conn.execute(
        f"SELECT lock_owner, lock_pid, lock_host, lock_expires, {_NOW} FROM sessions "
        "WHERE id = %s FOR UPDATE", (session_id,))).fetchone()
    if row is None:
        raise SessionError(f"no session {session_id!r} to lock; create it first")
    holder, pid, host, expires, now = row
    # the expiry is on the database's clock: shift it onto ours to judge it
    if holder and holder != owner and lease_is_live(
            pid, host, None if expires is None else expires - float(now) + time.time()):
        where = "" if host == HOST else f" on {host}"
        raise SessionError(f"session {session_id} is in use by another run "
                           f"(pid {pid}{where})")
    await conn.execute(
        f"UPDATE sessions SET lock_owner = %s, lock_pid = %s, lock_host = %s, "
        f"lock_expires = {_NOW} + %s WHERE id = %s",
        (owner, os.getpid(), HOST, LEASE_SECONDS, session_id))


async def _next_epoch(conn: psycopg.AsyncConnection[Any], session_id: str) -> int:
    row = await (await conn.execute("UPDATE sessions SET epoch = epoch + 1 WHERE id = %s "
                                    "RETURNING epoch", (session_id,))).fetchone()
    if row is None:
        raise SessionError(f"no session {session_id!r} to compact")
    return int(row[0])


async def _insert_events(conn: psycopg.AsyncConnection[Any], session_id: str, run_id: str,
                         events: list[dict[str, Any]], now: float) -> None:
    split = [split_model_call(run_id, original) for original in events]
    calls = [(session_id, *call) for _, call in split if call is not None]
    async with conn.cursor() as cursor:
        if calls:
            await cursor.executemany(_INSERT_CALL, calls)
        row = events_row(session_id, run_id, now, [event for event, _ in split])
        await cursor.execute(_INSERT_EVENT, (*row[:4], row[-1]))
