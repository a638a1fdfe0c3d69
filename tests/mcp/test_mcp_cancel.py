"""Cancelling a run while it waits on a real MCP server's tool call ends it `cancelled`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
HANG = 60.0


async def test_cancel_during_an_mcp_call_ends_the_run_cancelled(
        everything: str, tmp_path: Path) -> None:
    started = asyncio.Event()

    def on_event(event: Event) -> None:
        if event.type == "tool_call":
            started.set()

    script = [Reply(tool_calls=[call("mcp__ev__trigger-long-running-operation",
                                     {"duration": HANG, "steps": 2})])]
    config = {"ev": {"command": "node", "args": [everything]}}
    with FakeModelServer(script) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                         mcp_servers=config, cache_dir=str(tmp_path),
                         callbacks=[on_event]) as agent:
            run = asyncio.ensure_future(agent.run("go"))
            await asyncio.wait_for(started.wait(), 30)
            assert agent.cancel()
            result = await asyncio.wait_for(run, 20)
    assert result.stop_reason == "cancelled"
    assert "cancelled" in result.messages[-1].content
