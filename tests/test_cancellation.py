"""Cancellation is honest everywhere: `cancel()` while the run grades its answer, compacts, asks
for a budget summary or waits on an approval ends the run `cancelled` (the CLI
exits 130), never `completed`. (An MCP call: tests/mcp/test_mcp_cancel.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopwright import Agent, notes, tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.grading import GRADER_PROMPT
from loopwright.messages import Message, assistant, user
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
HANG = 60.0  # how long a side call the test cancels would otherwise take


def first_content(request: RecordedRequest) -> str:
    return str(request.body["messages"][0].get("content") or "")


class Stalling:
    """A handler: requests `stalls(request)` picks are held (as a slow provider would) and
    announced through `arrived`; the others get `script` in order."""

    def __init__(self, stalls: Callable[[RecordedRequest], bool], script: list[ScriptItem]):
        self.stalls = stalls
        self.script = list(script)
        self.arrived = threading.Event()

    async def __call__(self, request: RecordedRequest) -> ScriptItem:
        if self.stalls(request):
            self.arrived.set()
            await asyncio.sleep(HANG)
            return Reply("too late")
        return self.script.pop(0) if self.script else Reply("the end")


async def cancel_when(arrived: threading.Event | asyncio.Event, agent: Agent,
                      run: asyncio.Future[Any]) -> Any:
    if isinstance(arrived, threading.Event):
        assert await asyncio.to_thread(arrived.wait, 30), "the stalled step never started"
    else:
        await asyncio.wait_for(arrived.wait(), 30)
    assert agent.cancel()
    return await asyncio.wait_for(run, 20)


async def test_cancel_during_rubric_grading_ends_the_run_cancelled() -> None:
    handler = Stalling(lambda r: first_content(r) == GRADER_PROMPT, [Reply("It is 5 km.")])
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      rubric="State the unit.", callbacks=[events.append])
        result = await cancel_when(handler.arrived, agent,
                                   asyncio.ensure_future(agent.run("How far?")))
    assert result.stop_reason == "cancelled"
    assert events[-1].type == "cancelled"
    assert result.grade is not None and not result.grade["graded"]


def long_history() -> list[Message]:
    history = [user("Translate the manual.")]
    for n in range(12):
        history += [assistant(f"Chapter {n} translated. " + "la la " * 150), user("go on")]
    return [*history, assistant("Done with the chapters.")]


async def test_cancel_during_the_compaction_summary_ends_the_run_cancelled() -> None:
    handler = Stalling(lambda r: first_content(r) == SUMMARY_SYSTEM, [])
    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      context_window=4_096)
        run = asyncio.ensure_future(agent.run("list them", history=long_history()))
        result = await cancel_when(handler.arrived, agent, run)
    assert result.stop_reason == "cancelled"
    assert len(server.model_requests) == 1  # the summary; the turn's request never went out


@tool(read_only=True)
def look(thing: str) -> str:
    """Look at a thing."""
    return f"{thing} looks fine"


async def test_cancel_during_the_budget_summary_ends_the_run_cancelled() -> None:
    def is_budget_summary(request: RecordedRequest) -> bool:
        return request.body["messages"][-1]["content"] == notes.text(notes.BUDGET_SUMMARY)

    handler = Stalling(is_budget_summary, [Reply(tool_calls=[call("look", {"thing": "a"})])])
    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, tools=[look],
                      iteration_budget=1)
        result = await cancel_when(handler.arrived, agent,
                                   asyncio.ensure_future(agent.run("look around")))
    assert result.stop_reason == "cancelled"


async def test_cancel_during_an_approval_wait_ends_the_run_cancelled() -> None:
    asked = asyncio.Event()

    async def never_answers(action: str, detail: str) -> bool:
        asked.set()
        await asyncio.sleep(HANG)
        return True

    script = [Reply(tool_calls=[call("look", {"thing": "the door"})])]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, tools=[look],
                      approval=never_answers, policy={"look": {"ask": ["door"]}})
        result = await cancel_when(asked, agent, asyncio.ensure_future(agent.run("go")))
    assert result.stop_reason == "cancelled"
    assert len(server.model_requests) == 1


def test_ctrl_c_during_rubric_grading_exits_130(tmp_path: Path) -> None:
    handler = Stalling(lambda r: first_content(r) == GRADER_PROMPT, [Reply("It is 5 km.")])
    with FakeModelServer(handler=handler) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loopwright", "run", "How far?", "--json", "--model", "m",
             "--base-url", server.base_url, "--rubric", "State the unit."],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("LOOPWRIGHT_")},
                 "HOME": str(tmp_path)})
        try:
            assert handler.arrived.wait(30), "grading never started"
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, stderr
    assert json.loads(stdout.splitlines()[-1])["type"] == "cancelled"


async def test_cancel_while_a_plugin_works_before_the_call_stops_the_call_going_out() -> None:
    from loopwright.plugins import LoopPlugin

    class SlowPlugin(LoopPlugin):  # e.g. fetching context of its own, not through the run
        def __init__(self) -> None:
            self.busy = asyncio.Event()

        async def before_model(self, run: Any, request: Any) -> None:
            self.busy.set()
            await asyncio.sleep(0.2)

    plugin = SlowPlugin()
    with FakeModelServer([]) as server:  # cancelled before the call goes out
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, plugins=[plugin])
        result = await cancel_when(plugin.busy, agent, asyncio.ensure_future(agent.run("go")))
    assert result.stop_reason == "cancelled"
    assert server.model_requests == []
