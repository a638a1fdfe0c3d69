"""Nothing leaks: open fds, HTTP clients and event loops return to their baseline after repeated
`asyncio.run(agent.run(...))`, and `aclose()` / `async with Agent` close what they opened."""

from __future__ import annotations

import asyncio
import gc
import os
import time

import httpx

from loopwright import Agent
from loopwright.testing import FakeModelServer, Reply


def open_fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def fds_settle_to(baseline: int) -> int:
    """Open fds once the fake server's thread has closed its side of our closed connections
    (it does so on its own loop, a moment after ours)."""
    for _ in range(40):
        if open_fds() <= baseline:
            break
        time.sleep(0.05)
    return open_fds()


def live_clients() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects()
               if isinstance(o, httpx.AsyncClient) and not o.is_closed)


def live_loops() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop))


def test_twenty_asyncio_runs_leak_no_fd_client_or_loop() -> None:
    with FakeModelServer([Reply("hi")] * 20) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k")
        fds, clients, loops = open_fds(), live_clients(), live_loops()
        for _ in range(20):
            assert asyncio.run(agent.run("go")).output == "hi"
        assert fds_settle_to(fds) <= fds
        assert live_clients() == clients
        assert live_loops() == loops
        asyncio.run(agent.aclose())
        assert fds_settle_to(fds) <= fds


async def test_async_with_closes_the_client_it_opened() -> None:
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        fds, clients = open_fds(), live_clients()
        async with Agent("m", base_url=server.base_url, api_key="k") as agent:
            assert (await agent.run("go")).output == "one"
            assert live_clients() == clients + 1
        assert live_clients() == clients
        assert fds_settle_to(fds) <= fds
        # a closed agent is still usable: the next run opens a client again
        assert (await agent.run("again")).output == "two"
        await agent.aclose()
    assert live_clients() == clients


async def test_aclose_keeps_the_client_another_agent_still_uses() -> None:
    clients = live_clients()
    with FakeModelServer([Reply("a"), Reply("b"), Reply("c")]) as server:
        first = Agent("m", base_url=server.base_url, api_key="k")
        second = Agent("m", base_url=server.base_url, api_key="k")
        assert (await first.run("go")).output == "a"
        assert (await second.run("go")).output == "b"
        await first.aclose()
        assert live_clients() == clients + 1  # the second agent's runs share it
        assert (await second.run("go")).output == "c"
        await second.aclose()
    assert live_clients() == clients
