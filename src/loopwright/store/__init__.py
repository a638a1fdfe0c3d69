"""Durable sessions: the `SessionStore` protocol, what it returns, and `open_store()`.

The default store is SQLite (`store/sqlite.py`): one file in WAL mode, by default
`<data dir>/sessions.db`. A run writes each message as it is appended, so a process killed
mid-turn loses at most the reply in flight, and `Agent(session_id=...)` resumes it.

The library persists only when asked (`Agent(store=...)`); the CLI persists by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from loopwright.messages import Message, Usage

if TYPE_CHECKING:
    from loopwright.store.sqlite import SQLiteStore

DB_FILENAME = "sessions.db"


@dataclass(kw_only=True)
class SessionInfo:
    """One stored session, with usage and cost summed over its runs."""

    id: str
    parent_id: str | None = None
    title: str = ""
    model: str = ""
    cwd: str = ""
    created: float = 0.0
    updated: float = 0.0
    stop_reason: str | None = None  # of the latest run; "interrupted" if it never finished
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None  # None when any run's cost is unknown
    message_count: int = 0
    runs: int = 0
    locked_by: int | None = None  # pid of the live run writing to it, if any

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "parent_id": self.parent_id, "title": self.title, "model": self.model,
            "cwd": self.cwd, "created": self.created, "updated": self.updated,
            "stop_reason": self.stop_reason, "usage": self.usage.to_dict(), "cost": self.cost,
            "message_count": self.message_count, "runs": self.runs, "locked_by": self.locked_by,
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


@runtime_checkable
class SessionStore(Protocol):
    """What the agent needs from a session store. Implement it to persist elsewhere."""

    def create(self, session_id: str, *, model: str = "", cwd: str = "", title: str = "",
               parent_id: str | None = None, system_prompt: str | None = None) -> None:
        """Create the session if it does not exist yet (an existing one is left alone)."""

    def get(self, session_id: str) -> SessionInfo | None:
        """The session, or None."""

    def load(self, session_id: str) -> list[Message]:
        """The stored conversation in order (without the system prompt)."""

    def append(self, session_id: str, message: Message) -> None:
        """Write one message durably, after the ones already stored."""

    def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                      limit: int = 20) -> list[SessionInfo]:
        """Sessions, most recently updated first."""

    def acquire(self, session_id: str, owner: str) -> None:
        """Take the session's write lease or raise `SessionError` if a live run holds it."""

    def renew(self, session_id: str, owner: str) -> None:
        """Extend the lease (called periodically by the run holding it)."""

    def release(self, session_id: str, owner: str) -> None:
        """Give the lease back."""

    def record_run(self, session_id: str, record: RunRecord, *, model: str = "",
                   ended: bool = False) -> None:
        """Insert or update a run's row (usage so far; stop reason once `ended`)."""

    def record_events(self, session_id: str, run_id: str, events: list[dict[str, Any]]) -> None:
        """Append events (JSON forms of `loopwright.events`) to the session's event log."""

    def close(self) -> None:
        """Release resources."""


def default_store_path(data_dir: str | Path | None = None) -> Path:
    """`<data dir>/sessions.db`; the data dir defaults to the user's (XDG) data directory."""
    from loopwright.config import default_data_dir

    base = Path(data_dir).expanduser() if data_dir else default_data_dir()
    return base / DB_FILENAME


def open_store(spec: Any, *, data_dir: str | Path | None = None) -> SessionStore | None:
    """The store `Agent(store=...)` means.

    `None` / `False` / `"none"` → no persistence; `True` / `"default"` → the default SQLite file
    in the data dir; a path → that SQLite file (a directory gets `sessions.db` inside);
    a `SessionStore` object → itself.
    """
    if spec is None or spec is False:
        return None
    if isinstance(spec, str):
        lowered = spec.strip().lower()
        if lowered in ("", "none", "false", "0", "off", "no"):
            return None
        if lowered in ("default", "true", "1", "on", "yes"):
            spec = True
    if spec is True:
        return _sqlite(default_store_path(data_dir))
    if isinstance(spec, str | Path):
        path = Path(spec).expanduser()
        return _sqlite(path / DB_FILENAME if path.is_dir() else path)
    if isinstance(spec, SessionStore):
        return spec
    from loopwright.errors import ConfigError

    raise ConfigError(f"store={spec!r}: give a path, True for the default database, None for "
                      "no persistence, or an object implementing loopwright.store.SessionStore")


def _sqlite(path: Path) -> SQLiteStore:
    from loopwright.store.sqlite import SQLiteStore

    return SQLiteStore(path)


__all__ = [
    "DB_FILENAME",
    "RunRecord",
    "SessionInfo",
    "SessionStore",
    "default_store_path",
    "open_store",
]
