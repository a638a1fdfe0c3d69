"""A real reference MCP server killed under five concurrent runs that share it: the calls that
arrive while it restarts wait for the new connection instead of failing "not connected"."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call
from shared_helpers import wait_until

FAST = RetryPolicy(base_delay=0.01, jitter=0)
RUNS = 5


def recording_pid(pid_file: Path, script: str) -> str:
    """A shell command that appends its pid to `pid_file`, then becomes `node script`."""
    return f'echo $$ >> "{pid_file}"; exec node "{script}"'


def run_number(request: RecordedRequest) -> int:
    task = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    return int(task.rsplit(" ", 1)[1])


async def test_five_runs_sharing_a_killed_server_all_get_their_next_call_answered(
        everything: str, tmp_path: Path, kill_process: Callable[[int], None]) -> None:
    pids = tmp_path / "pids"
    config = {"ev": {"command": "sh", "args": ["-c", recording_pid(pids, everything)],
                     "connect_timeout": 30}}
    events: list[Event] = []
    arrived: list[int] = []
    restarting = threading.Event()

    def on_event(event: Event) -> None:
        events.append(event)
        if event.type == "status" and event.kind == "mcp_restart":
            restarting.set()

    async def handler(request: RecordedRequest) -> ScriptItem:
        n = run_number(request)
        turn = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return Reply(tool_calls=[call("mcp__ev__echo", {"message": f"before {n}"})])
        if turn == 1:
            arrived.append(n)
            # every run is between its two calls
            await wait_until(lambda: len(arrived) >= RUNS, "every run made its first call", 60)
            if n == arrived[0]:  # the first finds the server dead and restarts it ...
                kill_process(int(pids.read_text().split()[-1]))
            else:  # ... the others call while that restart is under way
                await wait_until(restarting.is_set, "the first run began the restart", 60)
            return Reply(tool_calls=[call("mcp__ev__echo", {"message": f"after {n}"})])
        return Reply(f"done {n}")

    with FakeModelServer(handler=handler) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                         mcp_servers=config, cache_dir=str(tmp_path / "cache"),
                         callbacks=[on_event]) as agent:
            results = await asyncio.wait_for(
                asyncio.gather(*(agent.run(f"task {n}") for n in range(RUNS))), 120)
    for n, result in enumerate(results):
        assert result.stop_reason == "completed", result.error
        before, after = [m for m in result.messages if m.role == "tool"]
        assert before.content == f"Echo: before {n}"
        assert (after.is_error, after.content) == (False, f"Echo: after {n}")
    assert len(pids.read_text().split()) == 2  # one restart served all five
    assert sum(1 for e in events if e.type == "status" and e.kind == "mcp_restart") == 1
