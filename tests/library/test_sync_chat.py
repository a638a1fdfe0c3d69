"""`Agent.chat()`, the synchronous form, keeps the async core's behaviour: an interrupted
`chat()` stops its run, whether or not an event loop is already running in the thread."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from loopwright import Agent, ConfigError, RunFailed, UsageLimitExceeded, tool
from loopwright.testing import FakeModelServer, Reply, call

# a user's program: chat() runs a tool that waits, writes `started` first and `effect` after
PROGRAM = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from loopwright import Agent, ConfigError, RunFailed, UsageLimitExceeded, tool

    @tool
    async def wait_then_write(seconds: float) -> str:
        '''Wait, then write a file.'''
        Path("started").touch()
        await asyncio.sleep(seconds)
        Path("effect").touch()
        return "written"

    agent = Agent("m", base_url=sys.argv[2], api_key="k", tools=[wait_then_write])

    async def in_a_running_loop() -> str:
        return agent.chat("go")

    try:
        if sys.argv[1] == "no loop":
            agent.chat("go")
        elif sys.argv[1] == "asyncio.run":  # its Ctrl-C cancels the main task
            asyncio.run(in_a_running_loop())
        else:  # a loop of the host's own, as Jupyter's kernel: Ctrl-C raises where it is
            asyncio.new_event_loop().run_until_complete(in_a_running_loop())
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
""")


@pytest.mark.parametrize("where", ["no loop", "asyncio.run", "a host's loop"])
def test_ctrl_c_during_chat_stops_the_run_at_once(where: str, tmp_path: Path) -> None:
    """`chat()` inside a running loop (Jupyter, asyncio.run) ran on a private thread that
    Ctrl-C did not reach: the interrupt was raised only once the run had gone on to its end,
    its tool's effect included."""
    (tmp_path / "user.py").write_text(PROGRAM, encoding="utf-8")
    # an hour's wait: a run that went on to its end would outlast the 30 s hang guard below
    script = [Reply(tool_calls=[call("wait_then_write", {"seconds": 3600})]), Reply("done")]
    with FakeModelServer(script, strict=False) as server:
        env = {key: value for key, value in os.environ.items()
               if not key.startswith("LOOPWRIGHT_")}
        proc = subprocess.Popen([sys.executable, "user.py", where, server.base_url],
                                cwd=tmp_path, env={**env, "HOME": str(tmp_path)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not (tmp_path / "started").exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert stdout.splitlines() == ["KeyboardInterrupt"], stderr
    assert not (tmp_path / "effect").exists()
    assert len(server.model_requests) == 1


async def test_chat_in_a_running_loop_that_nobody_interrupts_returns_its_answer() -> None:
    script = [Reply(tool_calls=[call("pause", {})]), Reply("after the pause")]

    @tool
    async def pause() -> str:
        """Pause a little: longer than one look at the caller."""
        await asyncio.sleep(0.3)
        return "paused"

    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[pause])
        assert agent.chat("go") == "after the pause"


async def test_chat_in_a_running_loop_refuses_the_agents_own_http_client_before_any_request(
        ) -> None:
    """The client belongs to the caller's loop: the run failed on the private one with
    `RunFailed: unexpected RuntimeError: <asyncio.locks.Event …> is bound to a different event
    loop`, which said nothing of the client nor of what to do."""
    async with httpx.AsyncClient() as client:
        with FakeModelServer([Reply("one")]) as server:
            agent = Agent("m", base_url=server.base_url, api_key="k", http_client=client)
            assert (await agent.run("on this loop")).output == "one"  # run() uses it here
            with pytest.raises(ConfigError, match=r"http_client .* await agent.run\(...\)"):
                agent.chat("on a loop of its own")
            assert len(server.model_requests) == 1


def test_chat_without_a_running_loop_refuses_the_agents_own_http_client() -> None:
    """Each chat() is a new event loop: the first call worked, the second failed mid-run with
    `RunFailed: unexpected RuntimeError: Event loop is closed` (the client's pooled connection
    belonged to the first call's loop)."""
    client = httpx.AsyncClient()
    with FakeModelServer([Reply("one"), Reply("two")], strict=False) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", http_client=client)
        for prompt in ("first", "second"):
            with pytest.raises(ConfigError, match="chat\\(\\) runs each call on an event loop"):
                agent.chat(prompt)
        assert server.model_requests == []
    asyncio.run(client.aclose())


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ADD = Reply(tool_calls=[call("add", {"a": 2, "b": 3})])


@pytest.mark.parametrize("output_type", [str, dict])
@pytest.mark.parametrize(("stop", "settings", "script"), [
    ("max_turns", {"max_turns": 1}, [ADD]),
    ("refused", {}, [Reply("I cannot help with that.", finish_reason="content_filter")]),
])
def test_chat_raises_when_the_run_ends_without_an_answer(
        stop: str, settings: dict[str, int], script: list[Reply], output_type: type) -> None:
    """chat() returned the runtime's note "[no answer from the model] The run ended
    (max_turns) …" as the answer, and as the `dict` of a typed agent."""
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[add],
                      output_type=output_type, output_mode="tool", **settings)
        with pytest.raises(RunFailed, match=rf"the run ended \({stop}\) without an answer") as e:
            agent.chat("2+3?")
    assert e.value.result.stop_reason == stop


def test_chat_raises_the_usage_limit_that_stopped_the_run() -> None:
    """chat() returned "" as the answer."""
    with FakeModelServer([ADD]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[add],
                      usage_limits={"requests": 1})
        with pytest.raises(UsageLimitExceeded, match="1 requests"):
            agent.chat("2+3?")


def test_chat_cancelled_from_another_thread_raises() -> None:
    """chat() returned "" as the answer."""
    started = threading.Event()

    @tool
    def wait() -> str:
        """Wait a little."""
        started.set()
        time.sleep(0.5)
        return "waited"

    with FakeModelServer([Reply(tool_calls=[call("wait", {})])], strict=False) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[wait])
        threading.Thread(target=lambda: started.wait(30) and agent.cancel()).start()
        with pytest.raises(RunFailed, match=r"\(cancelled\) without an answer"):
            agent.chat("wait")
