"""`GET /sessions` and `GET /sessions/{id}`: the stored sessions, read from the same store the
runs write to (SQLite on a worker thread, or PostgreSQL shared by several servers)."""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import Any, Protocol

from loopwright.messages import Message
from loopwright.store import SessionInfo
from loopwright.store.rows import DamagedRowError, DamagedSession, skip_damaged

_MARKS = str.maketrans("", "", "\x02\x03")  # the store's markers around matched words


class BrowsableStore(Protocol):
    """The reading side of the built-in stores (`ThreadedStore`, `PostgresStore`)."""

    async def get(self, session_id: str) -> SessionInfo | None: ...
    async def resolve(self, prefix: str) -> str: ...
    async def load(self, session_id: str) -> list[Message]: ...
    async def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                            limit: int = 20, damaged: list[DamagedSession] | None = None
                            ) -> list[SessionInfo]: ...
    async def children(self, session_id: str) -> list[SessionInfo]: ...
    async def events(self, session_id: str) -> list[dict[str, Any]]: ...
    async def turns(self, session_id: str) -> list[dict[str, Any]]: ...
    async def runs(self, session_id: str) -> list[dict[str, Any]]: ...
    async def search(self, text: str, *, limit: int = 10, any_word: bool = False,
                     exclude_session: str | None = None, cwd: str | None = None,
                     damaged: list[DamagedSession] | None = None) -> list[Any]: ...


class SessionView:
    """A stored session as answers show it: the directory it ran in (`cwd`, a path of the
    server's machine, the user's name in it as often as not) becomes `folder`, that directory
    relative to the served workspace ("." for the workspace itself) or null when it lies
    elsewhere: the store is shared with the CLI, whose sessions ran anywhere. A client may see
    which part of the workspace a session worked on, never where the workspace is."""

    def __init__(self, workspace: str | None) -> None:
        # resolved once, when the server starts: no file system call per answer
        self._workspace = PurePath(os.path.realpath(workspace)) if workspace else None

    def of(self, info: SessionInfo) -> dict[str, Any]:
        shown = info.to_dict()
        cwd = shown.pop("cwd")
        shown["folder"] = self._folder(cwd)
        return shown

    def _folder(self, cwd: str) -> str | None:
        if self._workspace is None or not cwd:
            return None
        ran_in = PurePath(os.path.normpath(cwd))  # a stored ".." must not climb out of it
        if not ran_in.is_absolute() or not ran_in.is_relative_to(self._workspace):
            return None
        return ran_in.relative_to(self._workspace).as_posix() or "."


async def list_sessions(store: BrowsableStore, *, view: SessionView, limit: int,
                        query: str | None, model: str | None = None,
                        damaged: list[DamagedSession]) -> list[dict[str, Any]]:
    """Recent sessions first; with `query`, the sessions whose messages match it, best first,
    each with a `snippet` of its best match. A damaged session is left out and added to
    `damaged` (once)."""
    if not query:
        return [view.of(info) for info in await store.list_sessions(
            model=model, limit=limit, damaged=damaged)]
    found: dict[str, dict[str, Any]] = {}
    for hit in await store.search(query, limit=limit * 4, damaged=damaged):
        if hit.session_id in found or len(found) >= limit:
            continue
        try:
            info = await store.get(hit.session_id)
        except DamagedRowError as exc:
            skip_damaged(hit.session_id, exc, damaged)
            continue
        if info is not None and (model is None or info.model == model):
            found[hit.session_id] = {**view.of(info), "snippet": hit.snippet.translate(_MARKS)}
    return list(found.values())


async def session_detail(store: BrowsableStore, prefix: str, *, view: SessionView
                         ) -> dict[str, Any]:
    """One session: its summary, live conversation, events, per-turn usage, runs and the
    sub-agent sessions it delegated to. Raises `SessionError` for an unknown id."""
    session_id = await store.resolve(prefix)
    info = await store.get(session_id)
    assert info is not None  # resolve() found it
    messages = [_message(m) for m in await store.load(session_id)]
    return {"session": view.of(info), "messages": messages,
            "events": await store.events(session_id), "turns": await store.turns(session_id),
            "runs": await store.runs(session_id),
            "children": [view.of(child) for child in await store.children(session_id)]}


def _message(message: Message) -> dict[str, Any]:
    data = message.to_dict()
    data.pop("provider_data", None)  # opaque wire blocks, only for the provider
    return data
