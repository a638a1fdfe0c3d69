"""What `Agent.run()` does with a run that failed (issue 32 item 5): it raises the typed error by
default, as pydantic-ai and the Agents SDK do; `raise_on_error=False` (the setting or the
keyword) returns the result instead. Runs that stopped for other reasons return as before."""

from __future__ import annotations

import socket

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ProviderError, RunFailed
from loopwright.testing import FakeModelServer, Fault, Reply, call
from loopwright.tools.base import tool

FAST = RetryPolicy(base_delay=0.01, jitter=0, attempts=2)


def dead_endpoint() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def test_a_dead_endpoint_raises_a_provider_error_by_default() -> None:
    agent = Agent("m", base_url=dead_endpoint(), api_key="k", retry=FAST)
    with pytest.raises(ProviderError, match="connection failed"):
        await agent.run("Hello?")


async def test_the_setting_opts_out_and_returns_the_failed_result() -> None:
    agent = Agent("m", base_url=dead_endpoint(), api_key="k", retry=FAST, raise_on_error=False)
    result = await agent.run("Hello?")
    assert result.stop_reason == "error" and result.output == ""
    assert isinstance(result.exception, ProviderError)


async def test_the_keyword_opts_out_for_one_run() -> None:
    with FakeModelServer([Fault.status(500)] * 2) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST)
        result = await agent.run("Hello?", raise_on_error=False)
    assert result.stop_reason == "error" and "500" in (result.error or "")


async def test_a_bug_in_a_tool_is_a_tool_result_not_a_raise() -> None:
    @tool
    def broken() -> str:
        """Always fails."""
        raise KeyError("oops")

    script = [Reply(tool_calls=[call("broken", {})]), Reply("It failed; sorry.")]
    with FakeModelServer(script) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", tools=[broken]).run("x")
    assert result.stop_reason == "completed" and result.output == "It failed; sorry."


async def test_a_run_stopped_by_its_turn_limit_returns_without_raising() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    with FakeModelServer([Reply(tool_calls=[call("ping", {})])]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[ping], max_turns=1)
        result = await agent.run("x")
    assert result.stop_reason == "max_turns"


async def test_a_failure_without_a_typed_error_raises_run_failed_with_the_result() -> None:
    class Boom:
        """A plugin with a bug: the run ends `error` with a plain exception."""

        def for_run(self, run: object) -> Boom:
            return self

        async def before_model(self, run: object, request: object) -> None:
            raise RuntimeError("bug in before_model")

    from loopwright.plugins import LoopPlugin

    class BoomPlugin(Boom, LoopPlugin):
        pass

    with FakeModelServer([]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", plugins=[BoomPlugin()])
        with pytest.raises(RunFailed) as raised:
            await agent.run("x")
    assert raised.value.result.stop_reason == "error"  # type: ignore[attr-defined]
