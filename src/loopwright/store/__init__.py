"""Durable sessions: the `SessionStore` protocol, what it returns, and `open_store()`.

The default store is SQLite (`store/sqlite.py`): one file in WAL mode, by default
`<data dir>/sessions.db`, used from a worker thread of its own (`store/threaded.py`). Shared
deployments use PostgreSQL (`store/postgres.py`, `store="postgresql://…"`). A run's writes are
queued and written together (`store/recorder.py`), durable before each model request, before a
call that may change something and as soon as tool results come in, so a process killed at any
point loses at most the reply in flight, and `Agent(session_id=...)` resumes it.

The library persists only when asked (`Agent(store=...)`); the CLI persists by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from loopwright.errors import SessionError
from loopwright.messages import Message, Usage

DB_FILENAME = "sessions.db"


@dataclass(kw_only=True)
class SessionInfo:
    """One stored session, with usage and cost summed over its runs."""

    id: str
    parent_id: str | None = None  # the session that delegated to this one (a sub-agent's)
    title: str = ""
    model: str = ""
    base_url: str = ""  # the provider the session ran against (never its key)
    api_mode: str = ""
    cwd: str = ""
    created: float = 0.0
    updated: float = 0.0
    stop_reason: str | None = None  # of the latest run; "interrupted" if it never finished
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None  # None when any run's cost is unknown
    message_count: int = 0  # of the live conversation (the newest epoch)
    epoch: int = 0  # how many times the session was compacted
    runs: int = 0
    locked_by: int | None = None  # pid of the live run writing to it, if any

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "parent_id": self.parent_id, "title": self.title, "model": self.model,
            "base_url": self.base_url, "api_mode": self.api_mode,
            "cwd": self.cwd, "created": self.created, "updated": self.updated,
            "stop_reason": self.stop_reason, "usage": self.usage.to_dict(), "cost": self.cost,
            "message_count": self.message_count, "epoch": self.epoch, "runs": self.runs,
            "locked_by": self.locked_by,
        }


@dataclass(kw_only=True)
class RunRecord:
    """What a run reports about itself when it ends (or after each turn)."""

    run_id: str
    stop_reason: str | None = None
    error: str | None = None
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None


@dataclass(kw_only=True)
class Epoch:
    """One stretch of a session's conversation between compactions (its lineage, oldest first).

    Compaction does not give the session a new id: the messages it summarised stay stored as an
    older epoch, and the compacted conversation goes on as the next one under the same id."""

    epoch: int
    messages: int
    first: float
    last: float


class StoreBusy(SessionError):
    """The store is locked or busy right now; the same write may succeed if tried again."""


class SyncSessionStore(Protocol):
    """A blocking store (the SQLite one). `open_store` runs it on a worker thread of its own
    (`ThreadedStore`), so its methods are never called on the event loop. Method meanings are
    those of `SessionStore`."""

    def create(self, session_id: str, *, model: str = "", cwd: str = "", title: str = "",
               parent_id: str | None = None, system_prompt: str | None = None) -> None: ...
    def update(self, session_id: str, **fields: Any) -> None: ...
    def get(self, session_id: str) -> SessionInfo | None: ...
    def load(self, session_id: str) -> list[Message]: ...
    def append(self, session_id: str, message: Message) -> None: ...
    def append_many(self, session_id: str, history: list[Message]) -> None: ...
    def compact(self, session_id: str, history: list[Message]) -> int: ...
    def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                      limit: int = 20) -> list[SessionInfo]: ...
    def acquire(self, session_id: str, owner: str) -> None: ...
    def renew(self, session_id: str, owner: str) -> None: ...
    def release(self, session_id: str, owner: str) -> None: ...
    def record_run(self, session_id: str, record: RunRecord, *, model: str = "",
                   ended: bool = False) -> None: ...
    def record_turn(self, session_id: str, run_id: str, turn: int, usage: Usage,
                    cost: float | None) -> None: ...
    def record_events(self, session_id: str, run_id: str,
                      events: list[dict[str, Any]]) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class SessionStore(Protocol):
    """What the agent needs from a session store (async: nothing may block the event loop).
    Implement it to persist elsewhere; `SQLiteStore` and `PostgresStore` are the built-in ones.

    A session id is stable for the life of the conversation: compaction starts a new epoch of
    the same session (`compact`), it never asks the caller to follow a new id."""

    async def create(self, session_id: str, *, model: str = "", cwd: str = "", title: str = "",
                     parent_id: str | None = None, system_prompt: str | None = None) -> None:
        """Create the session if it does not exist yet (an existing one is left alone);
        `parent_id` links a sub-agent's session to the session that delegated to it."""

    async def update(self, session_id: str, **fields: Any) -> None:
        """Change `title`, `model`, `cwd` or `system_prompt` of a session."""

    async def get(self, session_id: str) -> SessionInfo | None:
        """The session, or None."""

    async def load(self, session_id: str) -> list[Message]:
        """The session's live conversation in order (its newest epoch, without system prompt)."""

    async def append(self, session_id: str, message: Message) -> None:
        """Write one message durably, after the ones already stored."""

    async def append_many(self, session_id: str, history: list[Message]) -> None:
        """Write several messages durably in one transaction."""

    async def compact(self, session_id: str, history: list[Message]) -> int:
        """Atomically start the session's next epoch with `history` (the compacted
        conversation); earlier epochs stay stored as its lineage. Returns the new epoch."""

    async def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                            limit: int = 20) -> list[SessionInfo]:
        """Sessions, most recently updated first."""

    async def acquire(self, session_id: str, owner: str) -> None:
        """Take the session's write lease or raise `SessionError` if a live run holds it."""

    async def renew(self, session_id: str, owner: str) -> None:
        """Extend the lease (called periodically by the run holding it)."""

    async def release(self, session_id: str, owner: str) -> None:
        """Give the lease back."""

    async def record_run(self, session_id: str, record: RunRecord, *, model: str = "",
                         ended: bool = False) -> None:
        """Insert or update a run's row: the recorder writes it when the run starts and when
        it ends (with its stop reason); a run not ended is read with its turns' totals."""

    async def record_turn(self, session_id: str, run_id: str, turn: int, usage: Usage,
                          cost: float | None) -> None:
        """Store what one turn of a run spent (tokens, and cost when the price is known). The
        recorder does not call it for a store with `write_batch`: a turn's record is its
        `turn_end` event (`store/turns.py`); `write_all` calls it for one without."""

    async def record_events(self, session_id: str, run_id: str,
                            events: list[dict[str, Any]]) -> None:
        """Append events (JSON forms of `loopwright.events`) to the session's event log."""

    async def aclose(self) -> None:
        """Release resources."""


def default_store_path(data_dir: str | Path | None = None) -> Path:
    """`<data dir>/sessions.db`; the data dir defaults to the user's (XDG) data directory."""
    from loopwright.settings import default_data_dir

    base = Path(data_dir).expanduser() if data_dir else default_data_dir()
    return base / DB_FILENAME


def open_store(spec: Any, *, data_dir: str | Path | None = None) -> SessionStore | None:
    """The store `Agent(store=...)` means.

    `None` / `False` / `"none"` → no persistence; `True` / `"default"` → the default SQLite file
    in the data dir; `"postgresql://…"` → that PostgreSQL database; a path → that SQLite file (a
    directory gets `sessions.db` inside); a `SessionStore` object → itself; a blocking store (a
    `SQLiteStore`) → itself, run on a worker thread.
    """
    if spec is None or spec is False:
        return None
    if isinstance(spec, str):
        lowered = spec.strip().lower()
        if lowered in ("", "none", "false", "0", "off", "no"):
            return None
        if lowered in ("default", "true", "1", "on", "yes"):
            spec = True
        elif lowered.startswith(("postgresql://", "postgres://")):
            from loopwright.store.postgres import PostgresStore

            return PostgresStore(spec.strip())
    if spec is True:
        return _threaded(default_store_path(data_dir))
    if isinstance(spec, str | Path):
        path = Path(spec).expanduser()
        return _threaded(path / DB_FILENAME if path.is_dir() else path)
    if isinstance(spec, SessionStore):
        return spec
    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.threaded import ThreadedStore

    if isinstance(spec, SQLiteStore):
        return ThreadedStore(spec)
    from loopwright.errors import ConfigError

    raise ConfigError(f"store={spec!r}: give a path, a postgresql:// URL, True for the default "
                      "database, None for no persistence, or an object implementing "
                      "loopwright.store.SessionStore")


def _threaded(path: Path) -> SessionStore:
    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.threaded import ThreadedStore

    return ThreadedStore(SQLiteStore(path))


__all__ = [
    "DB_FILENAME",
    "Epoch",
    "RunRecord",
    "SessionInfo",
    "SessionStore",
    "StoreBusy",
    "SyncSessionStore",
    "default_store_path",
    "open_store",
]


def unique_prefix_match(prefix: str, ids: list[str], where: str) -> str:
    """The one id of `ids` (the first few starting with `prefix`, sorted) that `prefix` names:
    an exact id wins; `SessionError` naming `where` if none or several match."""
    if prefix in ids:
        return prefix
    if not ids:
        raise SessionError(f"no session matches {prefix!r} in {where}")
    if len(ids) > 1:
        listed = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        raise SessionError(f"{prefix!r} matches several sessions ({listed}); "
                           "give more characters")
    return str(ids[0])
