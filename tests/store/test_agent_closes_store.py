"""`Agent.aclose()` releases the session store the agent opened from a path or URL, and the next
run opens it again; a store passed in as an object is its owner's, and a sub-agent's is its
parent's. Before, the store was never closed: after `async with Agent(store="s.db")` (or each
`chat()`) the SQLite file and its -wal/-shm stayed open in the process, and a PostgreSQL store
kept its connection open on the server.

What is open is read where it is: the process's /proc/self/fd, and the server's
`pg_stat_activity` (tests/pg_server.py's real PostgreSQL).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.builtin.delegate import make_delegate_tool
from loopwright.store import SessionStore, open_store
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc/self/fd")

HANG_GUARD = 30.0  # a server drops a closed client's backend soon; one left open never goes


def held_open(spec: str) -> list[str]:
    """What this process holds of the store `spec`: the SQLite file's open descriptors (the file,
    -wal, -shm), or the PostgreSQL server's backends on the database (from a connection to
    another database, so this look is not counted)."""
    if not spec.startswith("postgresql://"):
        fd_dir = Path("/proc/self/fd")
        found = []
        for entry in os.listdir(fd_dir):
            try:
                target = os.readlink(fd_dir / entry)
            except OSError:  # the listing's own descriptor, gone
                continue
            if target.startswith(spec):
                found.append(target)
        return found
    import psycopg

    server, database = spec.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s",
                            (database,)).fetchall()
    return [str(row[0]) for row in rows]


def released(spec: str) -> list[str]:
    """`held_open(spec)` once nothing is held, or what still is after the hang guard (a
    server ends a closed connection's backend a moment after the client goes)."""
    deadline = time.monotonic() + (HANG_GUARD if spec.startswith("postgresql://") else 0)
    while (held := held_open(spec)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return held


async def stored_user_turns(spec: str, session_id: str) -> list[str]:
    store = open_store(spec)
    assert store is not None
    try:
        return [m.content for m in await store.load(session_id) if m.role == "user"]
    finally:
        await store.aclose()


def agent_on(server: FakeModelServer, spec: Any, **options: Any) -> Agent:
    return Agent("m", base_url=server.base_url, api_key="k", store=spec, session_id="s",
                 **options)


async def test_async_with_closes_the_store_it_opened(store_spec: str) -> None:
    with FakeModelServer([Reply("one")]) as server:
        async with agent_on(server, store_spec) as agent:
            await agent.run("first")
            assert held_open(store_spec)  # open while the agent is in use
    assert released(store_spec) == []
    assert await stored_user_turns(store_spec, "s") == ["first"]


async def test_a_run_after_aclose_opens_the_store_again(store_spec: str) -> None:
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        agent = agent_on(server, store_spec)
        await agent.run("first")
        await agent.aclose()
        assert released(store_spec) == []
        assert (await agent.run("second")).output == "two"
        await agent.aclose()
    assert released(store_spec) == []
    assert await stored_user_turns(store_spec, "s") == ["first", "second"]


def test_each_chat_call_stores_its_turn_and_leaves_nothing_open(store_spec: str) -> None:
    """Each `chat()` runs on a loop of its own and closes the agent after; the store's
    connection (the file, or the server's backend) outlived the call."""
    import asyncio

    with FakeModelServer([Reply("one"), Reply("two"), Reply("three")]) as server:
        agent = agent_on(server, store_spec)
        assert [agent.chat(p) for p in ("first", "second", "third")] == ["one", "two", "three"]
    assert released(store_spec) == []
    assert asyncio.run(stored_user_turns(store_spec, "s")) == ["first", "second", "third"]


async def test_a_store_passed_as_an_object_stays_open_for_its_owner(store_spec: str) -> None:
    mine = open_store(store_spec)
    assert isinstance(mine, SessionStore)
    with FakeModelServer([Reply("one")]) as server:
        async with agent_on(server, mine) as agent:
            await agent.run("first")
        assert held_open(store_spec)  # not the agent's to close
        assert [m.content for m in await mine.load("s") if m.role == "user"] == ["first"]
        await mine.aclose()
    assert released(store_spec) == []


def store_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "loopwright-store"}


async def test_a_sub_agent_leaves_its_parents_store_open(store_spec: str) -> None:
    """The child runs on the parent's store object and is closed when its task ends
    (`delegate`); closing that store would end the parent's connection (or the SQLite
    store's thread) under the parent's run."""
    seen: list[tuple[list[str], set[threading.Thread]]] = []

    @tool
    def look() -> str:
        """Look at what is open."""
        seen.append((held_open(store_spec), store_threads()))
        return "looked"

    script = [Reply(tool_calls=[call("look", {})]),
              Reply(tool_calls=[call("delegate", {"task": "say hi"})]),
              Reply("hi"),  # the child's answer
              Reply(tool_calls=[call("look", {})]),
              Reply("done")]
    with FakeModelServer(script) as server:
        async with agent_on(server, store_spec, tools=[look, make_delegate_tool()]) as agent:
            assert (await agent.run("delegate, looking before and after")).output == "done"
    (before, threads_before), (after, threads_after) = seen
    assert before and after == before  # the same descriptors, the same server backend
    assert threads_after == threads_before
    assert released(store_spec) == []
    assert await stored_user_turns(store_spec, "s") == ["delegate, looking before and after"]


async def test_a_run_still_live_at_aclose_goes_on_storing(store_spec: str) -> None:
    """`aclose()` while a `start()`ed run waits in a tool: the store is closed under it, and
    the run's next writes open it again. A SQLite session's kept keys held the closed
    connection, and the run stopped with "… is not a loopwright session database or is
    corrupt (Cannot operate on a closed database.)"."""
    import asyncio

    entered, go_on = asyncio.Event(), asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait to be let go."""
        entered.set()
        await go_on.wait()
        return "let go"

    script = [Reply(tool_calls=[call("wait", {})]), Reply("done")]
    with FakeModelServer(script) as server:
        agent = agent_on(server, store_spec, tools=[wait])
        handle = await agent.start("wait, then answer")
        await entered.wait()
        await agent.aclose()
        go_on.set()
        result = await handle
        assert (result.stop_reason, result.output) == ("completed", "done"), result.error
        await agent.aclose()
    assert released(store_spec) == []
    store = open_store(store_spec)
    assert store is not None
    stored = await store.load("s")
    await store.aclose()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
