"""Leases are renewed by one task per event loop (store/heartbeat.py): a run that lasts keeps
its lease, its end stops the renewals, and runs at once add one task to the loop, not one
each."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path

import pytest

from loopwright import Agent, tool
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import ThreadedStore
from loopwright.testing import FakeModelServer, Reply, call


class CountedRenewals(ThreadedStore):
    def __init__(self, path: Path) -> None:
        super().__init__(SQLiteStore(path))
        self.renewed: list[str] = []

    async def renew(self, session_id: str, owner: str) -> None:
        await super().renew(session_id, owner)
        self.renewed.append(session_id)


@tool
async def slow(seconds: float) -> str:
    """Wait a while (changes something)."""
    await asyncio.sleep(seconds)
    return "done waiting"


def renew_every(seconds: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set the renewal period wherever the store reads it."""
    for module in ("loopwright.store.heartbeat", "loopwright.store.recorder"):
        try:
            monkeypatch.setattr(importlib.import_module(module), "RENEW_SECONDS", seconds)
        except (ImportError, AttributeError):
            continue


async def test_a_run_that_lasts_keeps_its_lease_and_its_end_stops_the_renewals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renew_every(0.02, monkeypatch)
    store = CountedRenewals(tmp_path / "s.db")
    try:
        with FakeModelServer([Reply(tool_calls=[call("slow", {"seconds": 0.3})]),
                              Reply("done")]) as server:
            agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store,
                          tools=[slow])
            result = await agent.run("go")
        assert result.stop_reason == "completed" and result.session_id is not None
        during = len(store.renewed)
        assert during >= 3 and set(store.renewed) == {result.session_id}
        info = await store.get(result.session_id)
        assert info is not None and info.locked_by is None  # given back at the end
        await asyncio.sleep(0.1)
        assert len(store.renewed) == during  # and renewed no more
    finally:
        await store.aclose()


async def tasks_while_three_runs_wait(store: ThreadedStore | None) -> int:
    """How many tasks the loop has once three runs each wait in a tool (counted when the third
    has arrived, not after a time a loaded machine may not keep)."""
    arrived: list[None] = []
    all_in, release = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_here() -> str:
        """Wait until the test has counted."""
        arrived.append(None)
        if len(arrived) == 3:
            all_in.set()
        await release.wait()
        return "released"

    # the three first requests come before any second one (each run then waits in the tool
    # until the count), so each is answered with the call
    with FakeModelServer([Reply(tool_calls=[call("wait_here", {})])] * 3
                         + [Reply("done")] * 3) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store,
                      tools=[wait_here])
        handles = [await agent.start("go") for _ in range(3)]
        await asyncio.wait_for(all_in.wait(), 120)  # a hang guard, not a bound
        count = len(asyncio.all_tasks())
        release.set()
        for handle in handles:
            assert (await handle.task).stop_reason == "completed"
        await agent.aclose()
    return count


async def test_runs_at_once_share_one_renewal_task(tmp_path: Path) -> None:
    """Each run had a task of its own sleeping until its first renewal (and its timer in the
    loop's heap, which the HTTP client's timers were compared with on every push and pop)."""
    store = ThreadedStore(SQLiteStore(tmp_path / "s.db"))
    try:
        without = await tasks_while_three_runs_wait(None)
        with_store = await tasks_while_three_runs_wait(store)
    finally:
        await store.aclose()
    assert with_store <= without + 1


class FailingRenewals(CountedRenewals):
    """A store whose renewal of one session raises an error that is no LoopwrightError (a
    store a user wrote, or a bug in it)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.broken: set[str] = set()

    async def renew(self, session_id: str, owner: str) -> None:
        if session_id in self.broken:
            raise RuntimeError("renewal blew up")
        await super().renew(session_id, owner)


async def test_one_runs_failing_renewal_does_not_stop_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs of one loop share one renewal task: an exception from one run's renewal must
    not end that task for every run (each run had a task of its own before)."""
    renew_every(0.02, monkeypatch)
    store = FailingRenewals(tmp_path / "s.db")
    try:
        script = [Reply(tool_calls=[call("slow", {"seconds": 0.4})]), Reply("done")]
        with FakeModelServer(script) as one, FakeModelServer(script) as other:
            agents = [Agent("test-model", base_url=server.base_url, api_key="k", store=store,
                            tools=[slow]) for server in (one, other)]
            store.broken.add("broken")
            handles = [await agent.start("go", session_id=name)
                       for agent, name in zip(agents, ("broken", "healthy"), strict=True)]
            results = [await handle.task for handle in handles]
            for agent in agents:
                await agent.aclose()
        assert [r.stop_reason for r in results] == ["completed", "completed"]
        assert store.renewed.count("healthy") >= 3
    finally:
        await store.aclose()
