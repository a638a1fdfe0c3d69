"""A run killed with SIGKILL loses at most the reply in flight, and resumes to completion."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import SessionError
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import wait_for_child

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

CHILD = '''
import asyncio, sys, time
from pathlib import Path
from loopwright import Agent, tool

base_url, db, session_id, marker = sys.argv[1:5]

@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@tool
def slow_step(seconds: float) -> str:
    """Take a while."""
    Path(marker).write_text("started")
    time.sleep(seconds)
    return "slow step done"

agent = Agent("test-model", base_url=base_url, api_key="k", store=db, session_id=session_id,
              tools=[add, slow_step])
asyncio.run(agent.run("Add 2 and 3, then take the slow step."))
'''


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def slow_step(seconds: float) -> str:
    """Take a while."""
    return "slow step done"


def start_child(tmp_path: Path, server: FakeModelServer, session_id: str) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen(
        [sys.executable, str(script), server.base_url, str(tmp_path / "s.db"), session_id,
         str(tmp_path / "marker")], text=True, stderr=subprocess.PIPE)


def kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)


def resumed_agent(server: FakeModelServer, db: Path, session_id: str) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                 session_id=session_id, tools=[add, slow_step],
                 retry=RetryPolicy(base_delay=0.01, jitter=0))


async def test_killed_while_the_model_answers_resumes_without_loss(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first_script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]),
                    Reply("never delivered", delay=30)]
    with FakeModelServer(first_script) as server:
        child = start_child(tmp_path, server, "crash-reply")
        wait_for_child(lambda: len(server.model_requests) == 2, child)  # reply 2 is in flight
        with pytest.raises(SessionError, match=rf"in use by another run \(pid {child.pid}\)"):
            await resumed_agent(server, db, "crash-reply").run("")
        kill(child)
    with SQLiteStore(db) as store:
        assert [m.role for m in store.load("crash-reply")] == ["user", "assistant", "tool"]
        info = store.get("crash-reply")
        assert info is not None and info.stop_reason == "interrupted"
    with FakeModelServer([Reply("2 + 3 = 5.")]) as server:
        result = await resumed_agent(server, db, "crash-reply").run("")
        sent = server.model_requests[0].body or {}
    assert result.output == "2 + 3 = 5."
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    with SQLiteStore(db) as store:
        stored = store.load("crash-reply")
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert stored[2].content == "5"
        assert stored == result.messages[1:]
        info = store.get("crash-reply")
        assert info is not None and (info.stop_reason, info.runs) == ("completed", 2)


async def test_killed_inside_a_tool_resumes_with_the_call_marked_interrupted(
        tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first_script = [Reply(tool_calls=[call("slow_step", {"seconds": 60})])]
    with FakeModelServer(first_script) as server:
        child = start_child(tmp_path, server, "crash-tool")
        wait_for_child((tmp_path / "marker").exists, child)
        kill(child)
    with FakeModelServer([Reply(tool_calls=[call("slow_step", {"seconds": 0})]),
                          Reply("Done after a retry.")]) as server:
        result = await resumed_agent(server, db, "crash-tool").run("")
        sent = server.model_requests[0].body or {}
    assert result.output == "Done after a retry."
    assert sent["messages"][-1]["content"] == INTERRUPTED_RESULT
    with SQLiteStore(db) as store:
        stored = store.load("crash-tool")
    assert [(m.role, m.content) for m in stored if m.role == "tool"] == [
        ("tool", INTERRUPTED_RESULT), ("tool", "slow step done")]
    assert len(stored) == 6  # user, call, interrupted result, call, result, answer
