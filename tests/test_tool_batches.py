"""How a reply's tool calls become one batch (DESIGN §6), through `Agent` and the fake server.

Each test here pins one behaviour a plausible one-line change in the loop, the executor, the
guards or the chat adapter would break unnoticed otherwise."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def make_agent(server: FakeModelServer, tools: list[Any], **kwargs: Any) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", tools=tools, retry=FAST,
                 **kwargs)


def sent_messages(server: FakeModelServer, n: int) -> list[dict[str, Any]]:
    body = server.model_requests[n].body
    assert body is not None
    messages: list[dict[str, Any]] = body["messages"]
    return messages


async def test_a_batch_with_writing_calls_runs_one_call_at_a_time_in_call_order() -> None:
    log: list[str] = []

    @tool
    async def write(name: str) -> str:
        """Write something."""
        log.append(f"start {name}")
        await asyncio.sleep(0.02)
        log.append(f"end {name}")
        return name

    @tool(read_only=True)
    async def peek(name: str) -> str:
        """Read something."""
        log.append(f"peek {name}")
        return name

    # two writing calls: run together, their starts and ends would interleave
    script = [Reply(tool_calls=[call("write", {"name": "a"}), call("peek", {"name": "p"}),
                                call("write", {"name": "b"})]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server, [write, peek]).run("go")
    assert log == ["start a", "end a", "peek p", "start b", "end b"]
    assert [m["content"] for m in sent_messages(server, 1) if m["role"] == "tool"] == [
        "a", "p", "b"]


async def test_read_only_calls_run_together_and_results_come_back_in_call_order() -> None:
    barrier = asyncio.Barrier(3)

    @tool(read_only=True)
    async def nap(seconds: float) -> str:
        """Sleep, then say how long."""
        await asyncio.wait_for(barrier.wait(), timeout=5)  # only if all three run at once
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    # they finish in the reverse order of the calls
    script = [Reply(tool_calls=[call("nap", {"seconds": 0.2}), call("nap", {"seconds": 0.1}),
                                call("nap", {"seconds": 0.01})]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, [nap]).run("go")
    assistant = sent_messages(server, 1)[-4]
    ids = [c["id"] for c in assistant["tool_calls"]]
    tools = [m for m in sent_messages(server, 1) if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ids
    assert [m["content"] for m in tools] == ["slept 0.2", "slept 0.1", "slept 0.01"]
    assert [m.content for m in result.messages if m.role == "tool"] == [
        "slept 0.2", "slept 0.1", "slept 0.01"]


@pytest.mark.parametrize("stream", [True, False])
async def test_reasoning_effort_is_sent_in_chat_completions_mode(stream: bool) -> None:
    with FakeModelServer(replies=[Reply(text="ok")]) as server:
        await make_agent(server, [], stream=stream, api_mode="chat_completions",
                         reasoning_effort="high").run("go")
    body = server.model_requests[0].body
    assert body is not None and body["reasoning_effort"] == "high"


@pytest.mark.parametrize("stream", [True, False])
async def test_duplicate_tool_call_ids_are_made_unique_in_history_and_on_the_wire(
        stream: bool) -> None:
    @tool(read_only=True)
    def echo(word: str) -> str:
        """Echo a word."""
        return word

    script = [Reply(tool_calls=[call("echo", {"word": "one"}, id="call_same"),
                                call("echo", {"word": "two"}, id="call_same")]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, [echo], stream=stream).run("go")
    (assistant,) = [m for m in result.messages if m.role == "assistant" and m.tool_calls]
    ids = [c.id for c in assistant.tool_calls]
    assert len(set(ids)) == 2
    assert [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"] == [
        (ids[0], "one"), (ids[1], "two")]
    wire = sent_messages(server, 1)
    wire_ids = [c["id"] for c in wire[-3]["tool_calls"]]
    assert wire_ids == ids
    assert [(m["tool_call_id"], m["content"]) for m in wire if m["role"] == "tool"] == [
        (ids[0], "one"), (ids[1], "two")]


async def test_the_doom_loop_guard_ignores_argument_key_order() -> None:
    ran: list[int] = []

    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(a + b)
        return a + b

    orders = ['{"a": 1, "b": 2}', '{"b": 2, "a": 1}', '{"a":1,"b":2}', '{"b":2, "a":1}',
              '{"b": 2,"a": 1}']
    script = [Reply(tool_calls=[call("add", raw)]) for raw in orders]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, [add]).run("go")
    assert ran == [3, 3]
    assert result.stop_reason == "loop_detected"
    assert len(server.model_requests) == 5


async def test_a_tool_that_raises_its_own_timeout_error_is_a_tool_error_not_a_crash() -> None:
    """A tool whose own call timed out (an HTTP client, a socket) raises `TimeoutError` with no
    tool time limit set: the held-out `flaky_rate` runs ended "unexpected TypeError: unsupported
    format string passed to NoneType.__format__" (the limit, None, was formatted)."""

    @tool
    async def fetch_rate(currency: str) -> str:
        """Fetch a rate."""
        raise TimeoutError("the rate service did not answer")

    script = [Reply(tool_calls=[call("fetch_rate", {"currency": "EUR"})]), Reply("No rate.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, [fetch_rate]).run("EUR rate?")
    assert result.stop_reason == "completed" and result.output == "No rate."
    sent = sent_messages(server, 1)[-1]["content"]
    assert "raised TimeoutError: the rate service did not answer" in sent


async def test_a_tool_over_its_time_limit_is_reported_as_timed_out() -> None:
    @tool(timeout=0.05)
    async def slow() -> str:
        """Take a while."""
        await asyncio.sleep(5)
        return "late"

    with FakeModelServer([Reply(tool_calls=[call("slow", {})]), Reply("gave up")]) as server:
        result = await make_agent(server, [slow]).run("go")
    assert result.output == "gave up"
    assert "'slow' timed out after 0.05s" in sent_messages(server, 1)[-1]["content"]
