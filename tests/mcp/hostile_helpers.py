"""Runs against `hostile_server.py`: one `Agent` run on the fake model server whose model
makes the calls a test scripts, and what came back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from loopwright import Agent, Message
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Reply, call

HOSTILE = str(Path(__file__).parent / "hostile_server.py")
FAST = RetryPolicy(base_delay=0.01, jitter=0)
HANG_GUARD = 120  # seconds: what a stall (a hang, not a slow machine) runs into


def hostile(mode: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [HOSTILE, mode], "connect_timeout": 30,
            "call_timeout": 30}


def results(messages: list[Message]) -> dict[str, str]:
    return {m.name or "": m.content for m in messages if m.role == "tool"}


async def run_against(servers: dict[str, Any], calls: list[tuple[str, dict[str, Any]]],
                      tmp_path: Path, **options: Any
                      ) -> tuple[dict[str, str], list[dict[str, Any]], list[Event]]:
    """One run whose model makes `calls` then answers: the tool results by name, the tools
    offered to the model on its first request, and the run's events."""
    return await run_turns(servers, [calls], tmp_path, **options)


async def run_turns(servers: dict[str, Any], turns: list[list[tuple[str, dict[str, Any]]]],
                    tmp_path: Path, **options: Any
                    ) -> tuple[dict[str, str], list[dict[str, Any]], list[Event]]:
    """As `run_against`, the model making each turn's calls in a reply of its own."""
    script = [Reply(tool_calls=[call(name, args) for name, args in calls]) for calls in turns]
    events: list[Event] = []
    with FakeModelServer(replies=[*script, Reply("done")]) as server:
        async with Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                         mcp_servers=servers, cache_dir=str(tmp_path / "cache"),
                         callbacks=[events.append], **options) as agent:
            result = await agent.run("go")
        offered = [t["function"] for t in server.model_requests[0].body.get("tools") or []]
        # nothing but the run itself reached the model
        assert len(server.model_requests) == len(turns) + 1
    assert result.stop_reason == "completed"
    return results(result.messages), offered, events


def mcp_notes(events: list[Event]) -> list[str]:
    return [e.message for e in events if e.type == "status" and e.kind == "mcp"]
