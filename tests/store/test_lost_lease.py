"""A run whose lease another run took (its process stalled past the lease's expiry: a stopped
process, a suspended machine) stops at the next boundary with a `SessionError`: it runs no more
calls that may change something and writes nothing more into the session the other run now
holds."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import pytest

import loopwright.store.heartbeat as beats
from loopwright import Agent, ToolContext, tool
from loopwright.errors import SessionError
from loopwright.store import open_store
from loopwright.store.postgres import PostgresStore
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call


@pytest.fixture
def quick_renewals(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Renewals every 0.1 s instead of every 15 s, so the test sees one at once; the event is
    set once a renewal has found the lease taken (the store says so, on whichever thread runs
    it), so the test waits for that, not for a time a loaded machine may not keep."""
    monkeypatch.setattr(beats, "RENEW_SECONDS", 0.1)
    lost = threading.Event()

    def telling(renew: Callable[..., Any]) -> Callable[..., Any]:
        def renew_sync(*args: Any) -> Any:
            try:
                return renew(*args)
            except SessionError:
                lost.set()
                raise

        async def renew_async(*args: Any) -> Any:
            try:
                return await renew(*args)
            except SessionError:
                lost.set()
                raise
        return renew_async if asyncio.iscoroutinefunction(renew) else renew_sync

    monkeypatch.setattr(SQLiteStore, "renew", telling(SQLiteStore.renew))
    monkeypatch.setattr(PostgresStore, "renew", telling(PostgresStore.renew))
    return lost


def expire_and_take(store_spec: str) -> None:
    """What a stall past the expiry looks like to another process: the lease has run out, and
    that process takes it."""
    if store_spec.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_spec, autocommit=True) as conn:  # the lease, taken over
            conn.execute("UPDATE sessions SET lock_owner = 'another run', lock_expires = "
                         "extract(epoch from now()) + 60 WHERE id = 's'")
        return
    with sqlite3.connect(store_spec) as raw:
        raw.execute("UPDATE sessions SET lock_expires = 1 WHERE id = 's'")
    with SQLiteStore(store_spec) as store:
        store.acquire("s", "another run")


async def test_a_run_that_lost_its_lease_stops_before_its_next_call(
        store_spec: str, quick_renewals: threading.Event) -> None:
    charged: list[int] = []
    taken = asyncio.Event()

    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card (a side effect)."""
        charged.append(amount)
        if amount == 5:
            await asyncio.to_thread(expire_and_take, store_spec)
            taken.set()
            # stalled on until a renewal finds the lease taken (a hang guard, not a bound)
            assert await asyncio.to_thread(quick_renewals.wait, 120)
        return f"charged {amount}"

    script = [Reply(tool_calls=[call("charge", {"amount": 5})]),
              Reply(tool_calls=[call("charge", {"amount": 7})]), Reply("Done.")]
    with FakeModelServer(script, strict=False) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      session_id="s", tools=[charge])
        with pytest.raises(SessionError, match="lost its lease"):
            await agent.run("Charge 5, then 7.")
    assert taken.is_set() and charged == [5]  # the second charge was not made
    store = open_store(store_spec)
    assert store is not None
    try:
        info = await store.get("s")
        assert info is not None and info.locked_by is not None  # still the other run's
        assert not [m for m in await store.load("s") if m.role == "tool"]  # nothing after
    finally:
        await store.aclose()
