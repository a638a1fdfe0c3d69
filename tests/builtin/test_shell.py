"""bash: real subprocesses, bounded output, timeouts and cancellation that kill the whole group."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, Tool, ToolContext, ToolError
from loopwright.builtin import bash, default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import TAG, live_processes, wait_until

FAST = RetryPolicy(base_delay=0.01, jitter=0)


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


def full_access(tmp_path: Path) -> ToolContext:
    """A context without a sandbox, for the process-group mechanics of a plain launch."""
    return ToolContext(workdir=tmp_path,
                       services={SANDBOX_SERVICE: SandboxPolicy(mode="full-access")})


async def test_output_and_exit_code(tmp_path: Path) -> None:
    text = await call_tool(bash, ToolContext(workdir=tmp_path),
                           command="echo out; echo err >&2; exit 3")
    assert text == "out\nerr\n[exit code 3]"


async def test_runs_in_the_working_directory_or_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    ctx = ToolContext(workdir=tmp_path)
    assert await call_tool(bash, ctx, command="pwd") == f"{tmp_path}\n[exit code 0]"
    assert await call_tool(bash, ctx, command="pwd", cwd="sub") == f"{tmp_path}/sub\n[exit code 0]"
    with pytest.raises(ToolError, match="outside the workspace"):
        await call_tool(bash, ctx, command="pwd", cwd="..")


async def test_huge_output_keeps_head_and_tail(tmp_path: Path) -> None:
    command = "echo FIRST; head -c 20000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST"
    text = await call_tool(bash, ToolContext(workdir=tmp_path), command=command)
    assert len(text) < 40_000
    assert text.startswith("FIRST\n") and text.endswith("LAST\n[exit code 0]")
    assert "bytes of output omitted" in text


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    command = f"sleep {TAG}1101 & sleep {TAG}1102; echo never"
    with pytest.raises(ToolError, match=r"timed out after 0\.5s") as info:
        await call_tool(bash, ToolContext(workdir=tmp_path), command=command, timeout=0.5)
    assert "never" not in str(info.value)
    await wait_until(lambda: not live_processes(f"sleep {TAG}110"), "every sleep is killed")


async def test_cancelling_the_task_kills_the_process_group(tmp_path: Path) -> None:
    ctx = ToolContext(workdir=tmp_path)
    task = asyncio.ensure_future(call_tool(bash, ctx, command=f"sleep {TAG}1201 & sleep {TAG}1202"))
    await wait_until(lambda: len(live_processes(f"sleep {TAG}120")) >= 2, "the sleeps run")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not live_processes(f"sleep {TAG}120"), "every sleep is killed")


async def test_the_run_cancelled_event_kills_the_process_group(tmp_path: Path) -> None:
    ctx = ToolContext(workdir=tmp_path)
    task = asyncio.ensure_future(call_tool(bash, ctx, command=f"sleep {TAG}1301 & sleep {TAG}1302"))
    await wait_until(lambda: len(live_processes(f"sleep {TAG}130")) >= 2, "the sleeps run")
    ctx.cancelled.set()
    with pytest.raises(ToolError, match="cancelled"):
        await task
    await wait_until(lambda: not live_processes(f"sleep {TAG}130"), "every sleep is killed")


async def test_unsandboxed_timeout_and_cancel_kill_the_process_group(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="timed out"):
        await call_tool(bash, full_access(tmp_path), command=f"sleep {TAG}1401 & sleep {TAG}1402",
                        timeout=0.5)
    await wait_until(lambda: not live_processes(f"sleep {TAG}140"), "every sleep is killed")
    ctx = full_access(tmp_path)
    task = asyncio.ensure_future(call_tool(bash, ctx, command=f"sleep {TAG}1403 & sleep {TAG}1404"))
    await wait_until(lambda: len(live_processes(f"sleep {TAG}140")) >= 2, "the sleeps run")
    ctx.cancelled.set()
    with pytest.raises(ToolError, match="cancelled"):
        await task
    await wait_until(lambda: not live_processes(f"sleep {TAG}140"), "every sleep is killed")


async def test_unsandboxed_background_children_holding_the_output_do_not_block(
        tmp_path: Path) -> None:
    text = await call_tool(bash, full_access(tmp_path),
                           command="sleep 30 & echo $! > child; echo started")
    child = int((tmp_path / "child").read_text())
    try:
        assert text.startswith("started\n") and "background processes" in text
        assert text.endswith("[exit code 0]")
    finally:
        os.kill(child, signal.SIGKILL)


async def test_agent_cancel_mid_command_kills_it_and_ends_the_run(tmp_path: Path) -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("bash", {"command": f"sleep {TAG}1501"})])]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), callbacks=[events.append])
        handle = await agent.start("run it")
        await wait_until(lambda: bool(live_processes(f"sleep {TAG}1501")), "the sleep runs")
        assert agent.cancel()
        result = await asyncio.wait_for(handle.task, 20)
    assert result.stop_reason == "cancelled"
    await wait_until(lambda: not live_processes(f"sleep {TAG}1501"), "the sleep is killed")
    assert events[-1].type == "cancelled"
    last = result.messages[-1]
    assert last.role == "tool" and "cancelled" in last.content


async def test_bash_is_neither_read_only_nor_hidden_from_core() -> None:
    assert not bash.read_only and bash.core
    assert bash.parameters["properties"]["timeout"]["default"] == 120
