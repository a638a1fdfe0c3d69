"""What the session store costs a run: one transaction per turn in steady state (everything the
turn queued, written together; for SQLite one hop to its thread), plus one before each call that
may change something (so a crash inside it resumes knowing it was made)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.messages import user
from loopwright.store import RunRecord
from loopwright.store.postgres import PostgresStore
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import ThreadedStore
from loopwright.store.writes import AppendMessages, RecordRun, StoreWrite
from loopwright.testing import FakeModelServer, Reply, call

READS = {"get", "load", "load_page", "message_count", "system_prompt", "lineage", "resolve",
         "loading a session", "reading a session", "counting messages"}


class CountedSQLite(ThreadedStore):
    """The SQLite store, counting its hops to the worker thread (one transaction each)."""

    def __init__(self, path: str) -> None:
        super().__init__(SQLiteStore(path))
        self.writes: list[str] = []

    async def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if method.__name__ not in READS:
            self.writes.append(method.__name__)
        return await super()._call(method, *args, **kwargs)

    def start_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> Any:
        self.writes.append("write_batch")  # the same hop and transaction, without a task
        return super().start_batch(session_id, writes)


class CountedPostgres(PostgresStore):
    """The PostgreSQL store, counting the statements' groups it sends (one transaction each)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.writes: list[str] = []

    @contextlib.asynccontextmanager
    async def _db(self, action: str, *, transaction: bool = False, pipeline: bool = False
                  ) -> AsyncIterator[Any]:
        if action not in READS:
            self.writes.append(action)
        async with super()._db(action, transaction=transaction, pipeline=pipeline) as conn:
            yield conn


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool
async def note(text: str) -> str:
    """Write a note down (changes something)."""
    return "noted"


def counted(store_spec: str) -> CountedSQLite | CountedPostgres:
    if store_spec.startswith("postgresql://"):
        return CountedPostgres(store_spec)
    return CountedSQLite(store_spec)


async def writes_of_a_run(store_spec: str, turns: int, tool_name: str) -> int:
    store = counted(store_spec)
    script = [Reply(tool_calls=[call(tool_name, {"key": f"k{n}"} if tool_name == "lookup"
                                     else {"text": f"n{n}"})]) for n in range(turns)]
    try:
        with FakeModelServer([*script, Reply("done")]) as server:
            result = await Agent("test-model", base_url=server.base_url, api_key="k",
                                 store=store, tools=[lookup, note]).run("go")
        assert result.stop_reason == "completed"
        return len(store.writes)
    finally:
        await store.aclose()


async def test_a_steady_turn_is_one_transaction(store_spec: str) -> None:
    few = await writes_of_a_run(store_spec, 3, "lookup")
    many = await writes_of_a_run(store_spec, 9, "lookup")
    assert (many - few) / 6 == 1


async def test_a_call_that_may_change_something_adds_one_before_it_runs(
        store_spec: str) -> None:
    few = await writes_of_a_run(store_spec, 3, "note")
    many = await writes_of_a_run(store_spec, 9, "note")
    assert (many - few) / 6 == 2


# a lease renewal (every 15 s: a slow machine)
ASIDE = {"renew", "renewing a session lease"}


async def test_a_run_opens_in_one_transaction_and_gives_its_lease_back_in_its_last(
        store_spec: str) -> None:
    store = counted(store_spec)
    try:
        with FakeModelServer([Reply("done"), Reply("again")]) as server:
            agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store,
                          session_id="s1")
            assert (await agent.run("go")).stop_reason == "completed"
            writes = [w for w in store.writes if w not in ASIDE]
            info = await store.get("s1")
            assert info is not None and info.locked_by is None  # given back
            assert (await agent.run("once more")).output == "again"  # and so free to take
    finally:
        await store.aclose()
    # opening (find, create, provider, lease), the prompt, the answer with the run's end, its
    # terminal event and the lease back
    opening, batch = (("open_session", "write_batch") if isinstance(store, CountedSQLite)
                      else ("opening a session", "writing a run's records"))
    assert writes == [opening, batch, batch]


async def test_a_new_session_opens_in_its_runs_first_write(store_spec: str) -> None:
    """A session whose id the agent made up cannot exist yet: nothing to find or resume, so
    it is created and leased in the transaction that stores the prompt. Its run is then two
    writes in all: the prompt, and the answer with the run's end and terminal event."""
    store = counted(store_spec)
    try:
        with FakeModelServer([Reply("done"), Reply("again")]) as server:
            agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store)
            result = await agent.run("go")
            assert result.stop_reason == "completed" and result.session_id is not None
            writes = [w for w in store.writes if w not in ASIDE]
            info = await store.get(result.session_id)
            assert info is not None and info.locked_by is None and info.message_count == 2
            assert (info.title, info.model, info.base_url) == ("go", "test-model",
                                                               server.base_url)
            assert [e["type"] for e in await store.events(result.session_id)] == [
                "turn_start", "model_call", "turn_end", "done"]
            # the session is an ordinary one: continued by id, it is found and resumed
            handle = await agent.start("once more", session_id=result.session_id)
            assert (await handle.task).output == "again"
            info = await store.get(result.session_id)
            assert info is not None and info.message_count == 4
    finally:
        await store.aclose()
    batch = "write_batch" if isinstance(store, CountedSQLite) else "writing a run's records"
    assert writes == [batch, batch]


class PlainStore:
    """A store with only the `SessionStore` protocol's calls (one a user wrote): no
    `open_session`, no `write_batch` (nor `start_batch`)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("open_session", "write_batch", "start_batch"):
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_a_store_without_the_folded_calls_opens_and_releases_call_by_call(
        store_spec: str) -> None:
    store = counted(store_spec)
    try:
        with FakeModelServer([Reply("done")]) as server:
            url = server.base_url
            result = await Agent("test-model", base_url=url, api_key="k",
                                 store=PlainStore(store), session_id="p1").run("go")
        assert result.stop_reason == "completed"
        info = await store.get("p1")
        assert info is not None and info.locked_by is None and info.message_count == 2
        assert info.base_url == url
        # its turn recorded call by call too (from the turn's turn_end event: store/turns.py)
        assert [(t["turn"], t["requests"]) for t in await store.turns("p1")] == [(1, 1)]
    finally:
        await store.aclose()
    if isinstance(store, CountedSQLite):
        assert {"create", "update", "acquire", "release", "record_turn"} <= set(store.writes)


async def test_a_store_a_user_wrote_opens_a_new_session_call_by_call(store_spec: str) -> None:
    """Only the built-in stores take a new session's opening in a batch (`opens_in_batch`):
    one with the same calls but not the flag (a user's own `write_batch` may not know
    `OpenSession`) is opened with `open_session` before the run, as any session."""
    store = counted(store_spec)

    class Unflagged(PlainStore):
        def __getattr__(self, name: str) -> Any:
            if name == "opens_in_batch":
                raise AttributeError(name)
            return getattr(self._inner, name)

    try:
        with FakeModelServer([Reply("done")]) as server:
            result = await Agent("test-model", base_url=server.base_url, api_key="k",
                                 store=Unflagged(store)).run("go")
        assert result.stop_reason == "completed" and result.session_id is not None
        info = await store.get(result.session_id)
        assert info is not None and info.locked_by is None and info.message_count == 2
    finally:
        await store.aclose()
    opening = "open_session" if isinstance(store, CountedSQLite) else "opening a session"
    assert store.writes[0] == opening


async def test_a_steady_postgresql_turn_is_not_parsed_again_on_the_client(
        store_spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's statement has ~60 parameters, past psycopg's cache of parsed `%s` statements
    (50): it was parsed for its placeholders on every turn, more client CPU than the rest of
    the write. Written with `$n` and sent by a raw cursor, it is not parsed at all."""
    if not store_spec.startswith("postgresql://"):
        pytest.skip("PostgreSQL's client only")
    import psycopg._queries as queries

    parsed: list[int] = []
    split = queries._split_query

    def counted_split(*args: Any, **kwargs: Any) -> Any:
        parsed.append(1)
        return split(*args, **kwargs)

    monkeypatch.setattr(queries, "_split_query", counted_split)
    await writes_of_a_run(store_spec, 3, "lookup")  # what every run sends, parsed (and kept)
    parsed.clear()
    await writes_of_a_run(store_spec, 3, "lookup")
    few, parsed[:] = len(parsed), []
    await writes_of_a_run(store_spec, 9, "lookup")
    assert len(parsed) == few  # as many for 9 turns as for 3: none per turn


def test_a_new_sessions_first_write_leaves_its_row_alone_and_its_end_touches_it(
        tmp_path: Path) -> None:
    """`updated` was just set when the session was made: the run's first batch does not
    rewrite the session's row and its two indexes again; the run's end does."""
    with SQLiteStore(tmp_path / "s.db") as store:
        assert store.open_session("s", "me") is False
        created = store._db.execute("SELECT updated FROM sessions").fetchone()[0]
        store.write_batch("s", [AppendMessages(messages=[user("hi")])])
        assert store._db.execute("SELECT updated FROM sessions").fetchone()[0] == created
        store.write_batch("s", [RecordRun(record=RunRecord(run_id="r"), ended=True)])
        assert store._db.execute("SELECT updated FROM sessions").fetchone()[0] > created
        other = SQLiteStore(tmp_path / "s.db")  # a session it did not make: touched at once
        other.open_session("s", "me")
        other.write_batch("s", [AppendMessages(messages=[user("again")])])
        assert other._db.execute("SELECT updated FROM sessions").fetchone()[0] > created
        other.close()
