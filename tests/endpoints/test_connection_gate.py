"""Model requests beyond the shared client's connection pool wait for a free connection, with no
timeout, and that wait is never a provider failure or a retry attempt (issue 14 item 6)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import pytest

from loopwright import Agent
from loopwright.endpoints.base import MAX_CONNECTIONS_ENV, max_connections
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, RecordedRequest, Reply
from shared_helpers import OpenedConnections

FIRST_REPLY_SECONDS = 16.0  # longer than the 15 s pool wait each request used to carry


async def test_a_run_waiting_for_the_only_connection_is_not_retried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the exact failure, scaled down: 1,000 runs on a 500-connection pool ended 0/1,000 with
    # "gave up after 6 attempts: connection failed: PoolTimeout"; here one connection, two
    # runs, and the first reply takes longer than the old 15 s pool wait
    monkeypatch.setenv(MAX_CONNECTIONS_ENV, "1")
    served = itertools.count()

    def handler(request: RecordedRequest) -> Reply:
        slow = next(served) == 0
        return Reply("slow" if slow else "quick", delay=FIRST_REPLY_SECONDS if slow else 0.0)

    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False,
                         retry=RetryPolicy(base_delay=0.01, jitter=0),
                         callbacks=[events.append]) as agent:
            results = await asyncio.gather(agent.run("one"), agent.run("two"))
    assert sorted(r.output for r in results) == ["quick", "slow"]
    assert [e.message for e in events
            if isinstance(e, StatusEvent) and e.kind == "retrying"] == []


async def test_many_runs_share_a_small_pool_and_all_finish(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_CONNECTIONS_ENV, "4")
    with FakeModelServer(handler=lambda r: Reply("done", delay=0.02)) as server:
        async with Agent("m", base_url=server.base_url, api_key="k") as agent:
            results = await asyncio.gather(*(agent.run(f"run {i}") for i in range(50)))
    assert [r.output for r in results] == ["done"] * 50


async def test_requests_fill_every_pool_of_the_shared_client_and_never_exceed_its_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 120 connections are twelve pools of 10 (httpcore walks a whole pool per request, so it is
    # split): all 120 requests are at the server at once only when every pool serves, and a pool
    # given more requests than it holds would queue them inside httpcore instead of our gate
    size = 120
    monkeypatch.setenv(MAX_CONNECTIONS_ENV, str(size))
    in_flight = peak = 0
    all_arrived = asyncio.Event()

    async def handler(request: RecordedRequest) -> Reply:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == size:
            all_arrived.set()
        with contextlib.suppress(TimeoutError):  # a deadline, so a failure ends the test
            await asyncio.wait_for(all_arrived.wait(), 20)
        in_flight -= 1
        return Reply("done")

    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False,
                         callbacks=[events.append]) as agent:
            results = await asyncio.gather(*(agent.run(f"run {i}") for i in range(size + 40)))
    assert [r.output for r in results] == ["done"] * (size + 40)
    assert peak == size
    assert [e for e in events if isinstance(e, StatusEvent) and e.kind == "retrying"] == []


@pytest.mark.parametrize("raw", ["0", "-3", "many", "2.5"])
def test_a_bad_pool_size_is_named(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(MAX_CONNECTIONS_ENV, raw)
    with pytest.raises(ValueError, match=f"{MAX_CONNECTIONS_ENV}='{raw}'"):
        max_connections()


def test_the_pool_size_defaults_to_500(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_CONNECTIONS_ENV, raising=False)
    assert max_connections() == 500


async def test_a_burst_does_not_leave_every_later_request_walking_its_peak_of_connections(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 31: at c=50 the first burst of 50 requests left the shared client's one pool of 100
    # holding 50 connections (kept), and httpcore walks every connection of a pool, once
    # per idle one, at each request's start and end: later requests, with far fewer in flight,
    # paid for the burst's peak. Pools of a few connections each, filled first to last, keep
    # the walk to one small pool however many connections the burst opened.
    import httpcore

    monkeypatch.delenv(MAX_CONNECTIONS_ENV, raising=False)
    burst = 50
    walked: list[int] = []
    assign = httpcore.AsyncConnectionPool._assign_requests_to_connections

    def counting(pool: httpcore.AsyncConnectionPool) -> list[httpcore.AsyncConnectionInterface]:
        walked.append(len(pool.connections))
        return assign(pool)

    monkeypatch.setattr(httpcore.AsyncConnectionPool, "_assign_requests_to_connections",
                        counting)
    arrived = 0
    all_arrived = asyncio.Event()

    async def handler(request: RecordedRequest) -> Reply:
        nonlocal arrived
        arrived += 1
        if arrived == burst:
            all_arrived.set()
        if arrived <= burst:  # the burst is held until all of it is at the server
            with contextlib.suppress(TimeoutError):  # a deadline, so a failure ends the test
                await asyncio.wait_for(all_arrived.wait(), 20)
        return Reply("done")

    opened = OpenedConnections(monkeypatch)
    with FakeModelServer(handler=handler) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False) as agent:
            first = await asyncio.gather(*(agent.run(f"burst {i}") for i in range(burst)))
            walked.clear()
            after_burst = opened.count
            later = [await agent.run(f"later {i}") for i in range(5)]
    assert arrived == burst + 5
    assert [r.output for r in first + later] == ["done"] * (burst + 5)
    assert after_burst >= burst and opened.count == after_burst  # kept and reused: none reopened
    assert walked and max(walked) <= 10  # before: 50, the burst's peak, at every later request


async def test_runs_one_at_a_time_keep_reusing_one_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the other side of the small pools: few runs at a time stay on the first pool's
    # connections, so splitting costs them no connection of their own
    opened = OpenedConnections(monkeypatch)
    with FakeModelServer(handler=lambda r: Reply("done")) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False) as agent:
            await agent.run("first")
            after_first = opened.count
            outputs = [(await agent.run(f"run {i}")).output for i in range(12)]
    assert outputs == ["done"] * 12
    assert opened.count == after_first
