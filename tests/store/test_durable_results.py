"""A tool's result is durable as soon as the tool returns, and a call cut off by a crash keeps its
idempotency key when the model makes it again: replayed with a child process killed with SIGKILL
at the exact point the issue names."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, ToolContext, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import wait_for_child

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

CHILD = '''
import asyncio, json, sys, time
from pathlib import Path
from loopwright import Agent, LoopPlugin, ToolContext, tool

base_url, db, session_id, ledger, marker, mode = sys.argv[1:7]

@tool
async def record_step(name: str, ctx: ToolContext) -> str:
    """Record a step in the ledger (a side effect), once per idempotency key."""
    with open(ledger, "a") as out:
        out.write(json.dumps({"name": name, "key": ctx.idempotency_key}) + "\\n")
    if mode == "inside":
        Path(marker).write_text("effect done")
        time.sleep(60)  # killed here: after the effect, before the tool returns
    return f"recorded {name}"

@tool
def hold() -> str:
    """Take a long while."""
    Path(marker).write_text("holding")
    time.sleep(60)
    return "held"

class SlowAfterTools(LoopPlugin):
    async def after_tools(self, run) -> None:
        Path(marker).write_text("after tools")
        time.sleep(60)  # a blocking hook: nothing else runs on the loop meanwhile

plugins = [SlowAfterTools()] if mode == "after_tools" else []
agent = Agent("test-model", base_url=base_url, api_key="k", store=db, session_id=session_id,
              tools=[record_step, hold], plugins=plugins)
asyncio.run(agent.run("Record step a."))
'''

LEDGER_KEYS: list[str] = []


@tool
async def record_step(name: str, ctx: ToolContext) -> str:
    """Record a step in the ledger (a side effect), once per idempotency key."""
    LEDGER_KEYS.append(ctx.idempotency_key)
    return f"recorded {name}"


@tool
def hold() -> str:
    """Take a long while."""
    return "held"


def run_child(tmp_path: Path, server: FakeModelServer, session_id: str, mode: str
              ) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen(
        [sys.executable, str(script), server.base_url, str(tmp_path / "s.db"), session_id,
         str(tmp_path / "ledger.jsonl"), str(tmp_path / "marker"), mode],
        text=True, stderr=subprocess.PIPE)


def kill_when_marked(tmp_path: Path, server: FakeModelServer, session_id: str, mode: str
                     ) -> None:
    child = run_child(tmp_path, server, session_id, mode)
    wait_for_child((tmp_path / "marker").exists, child)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)


def resumed(server: FakeModelServer, db: Path, session_id: str) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                 session_id=session_id, tools=[record_step, hold],
                 retry=RetryPolicy(base_delay=0.01, jitter=0))


def tool_messages(body: dict[str, Any] | None) -> list[str]:
    assert body is not None
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def ledger(tmp_path: Path) -> list[dict[str, str]]:
    path = tmp_path / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_result_returned_before_the_next_call_of_its_batch_is_durable(
        tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("record_step", {"name": "a"}), call("hold", {})])]
    with FakeModelServer(script) as server:
        kill_when_marked(tmp_path, server, "batch", "plain")
    with FakeModelServer([Reply("Done.")]) as server:
        result = await resumed(server, tmp_path / "s.db", "batch").run("")
        sent = tool_messages(server.model_requests[0].body)
    assert result.output == "Done."
    assert sent[0] == "recorded a"  # the model is not told that step a did not complete
    assert sent[1] == INTERRUPTED_RESULT  # the call cut off by the kill


async def test_a_result_is_durable_before_a_blocking_after_tools_hook(tmp_path: Path) -> None:
    with FakeModelServer([Reply(tool_calls=[call("record_step", {"name": "a"})])]) as server:
        kill_when_marked(tmp_path, server, "hook", "after_tools")
    with SQLiteStore(tmp_path / "s.db") as store:
        stored = store.load("hook")
    assert [(m.role, m.content) for m in stored[1:]] == [("assistant", ""),
                                                         ("tool", "recorded a")]


async def test_a_call_cut_off_after_its_effect_keeps_its_key_when_the_model_calls_it_again(
        tmp_path: Path) -> None:
    LEDGER_KEYS.clear()
    with FakeModelServer([Reply(tool_calls=[call("record_step", {"name": "a"})])]) as server:
        kill_when_marked(tmp_path, server, "inside", "inside")
    first = ledger(tmp_path)
    assert len(first) == 1 and first[0]["key"]
    again = [Reply(tool_calls=[call("record_step", {"name": "a"})]), Reply("Done.")]
    with FakeModelServer(again) as server:
        result = await resumed(server, tmp_path / "s.db", "inside").run("")
        note = tool_messages(server.model_requests[0].body)[-1]
    assert result.output == "Done."
    assert "may or may not have taken effect" in note and "check" in note
    assert [first[0]["key"]] == LEDGER_KEYS  # the same key: the tool can tell it already ran


async def test_the_same_call_made_twice_in_a_healthy_run_gets_two_keys(tmp_path: Path) -> None:
    LEDGER_KEYS.clear()
    script = [Reply(tool_calls=[call("record_step", {"name": "a"})]),
              Reply(tool_calls=[call("record_step", {"name": "a"})]), Reply("Done.")]
    with FakeModelServer(script) as server:
        await resumed(server, tmp_path / "s.db", "twice").run("Record a twice.")
    assert len(LEDGER_KEYS) == 2 and LEDGER_KEYS[0] != LEDGER_KEYS[1]
