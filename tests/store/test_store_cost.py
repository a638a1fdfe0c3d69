"""What the session store costs a run: one transaction per turn in steady state (everything the
turn queued, written together; for SQLite one hop to its thread), plus one before each call that
may change something (so a crash inside it resumes knowing it was made)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from loopwright import Agent, tool
from loopwright.store.postgres import PostgresStore
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import ThreadedStore
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
