"""The loop's behaviour matrix, run against every API mode, streamed and not, through `Agent` and
the fake model server over real HTTP: tool rounds, parallel calls, faults, stream fallback, empty
replies, auto-continue, reasoning and cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReasoningDelta, StatusEvent, TextDelta, ToolCallEvent
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, call
from shared_helpers import wait_until

FAST = RetryPolicy(base_delay=0.01, jitter=0)
MODES = ["chat_completions", "anthropic_messages", "responses"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=[True, False], ids=["stream", "plain"])
def stream(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def slow(seconds: float) -> str:
    """Wait, then say so."""
    await asyncio.sleep(seconds)
    return "waited"


class Run:
    """An agent on one server in one mode, with the events it emitted."""

    def __init__(self, server: FakeModelServer, mode: str, stream: bool, **kw: Any) -> None:
        self.events: list[Event] = []
        self.agent = Agent("m", base_url=server.base_url, api_key="k", api_mode=mode,
                           stream=stream, retry=FAST, tools=[add, slow],
                           callbacks=[self.events.append], **kw)

    def statuses(self, kind: str) -> list[StatusEvent]:
        return [e for e in self.events if isinstance(e, StatusEvent) and e.kind == kind]

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))


def tool_results_sent(request: RecordedRequest) -> list[str]:
    """The tool results a request carried, whatever its wire format."""
    body = request.body
    if request.format == "chat_completions":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if request.format == "anthropic_messages":
        return [block.get("content", "") for m in body["messages"] for block in m["content"]
                if block["type"] == "tool_result"]
    return [item["output"] for item in body["input"] if item["type"] == "function_call_output"]


def last_user_text(request: RecordedRequest) -> str:
    body = request.body
    if request.format == "responses":
        return str(body["input"][-1]["content"])
    last = body["messages"][-1]
    content = last["content"]
    return content if isinstance(content, str) else content[-1]["text"]


async def test_a_tool_round_then_an_answer(mode: str, stream: bool) -> None:
    with FakeModelServer([Reply(tool_calls=[call("add", {"a": 1, "b": 2})]),
                          Reply("The sum is 3.")]) as server:
        run = Run(server, mode, stream)
        result = await run.agent.run("What is 1+2?")
    assert result.stop_reason == "completed" and result.output == "The sum is 3."
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool",
                                                  "assistant"]
    assert tool_results_sent(server.model_requests[1]) == ["3"]
    assert [r.stream for r in server.model_requests] == [stream, stream]
    assert run.text() == "The sum is 3."


async def test_parallel_calls_come_back_in_call_order(mode: str, stream: bool) -> None:
    with FakeModelServer([
        Reply(tool_calls=[call("add", {"a": 1, "b": 2}), call("add", {"a": 10, "b": 20}),
                          call("add", {"a": 100, "b": 200})]),
        Reply("done"),
    ]) as server:
        run = Run(server, mode, stream)
        result = await run.agent.run("three sums")
    assert result.output == "done"
    calls = [e for e in run.events if isinstance(e, ToolCallEvent)]
    assert len({c.id for c in calls}) == 3
    assert tool_results_sent(server.model_requests[1]) == ["3", "30", "300"]


@pytest.mark.parametrize("fault", [Fault.rate_limit(retry_after_ms=10), Fault.status(500),
                                   Fault.status(503), Fault.overloaded()],
                         ids=["429", "500", "503", "529"])
async def test_transient_faults_are_retried(mode: str, stream: bool, fault: Fault) -> None:
    with FakeModelServer([fault, Reply("recovered")]) as server:
        run = Run(server, mode, stream)
        result = await run.agent.run("hi")
    assert result.output == "recovered"
    assert len(server.model_requests) == 2
    (retrying,) = run.statuses("retrying")
    assert retrying.data["status"] == fault.code
    if fault.retry_after_ms:
        assert retrying.data["delay"] == 0.01


async def test_a_cut_stream_falls_back_to_a_plain_call(mode: str, stream: bool) -> None:
    with FakeModelServer([Fault.cut_stream(Reply("a long reply that dies half way"),
                                           after_chunks=3),
                          Reply("whole reply")]) as server:
        run = Run(server, mode, stream)
        result = await run.agent.run("hi")
    assert result.output == "whole reply"
    assert [r.stream for r in server.model_requests] == [stream, False]
    if stream:
        (fallback,) = run.statuses("retrying")
        assert fallback.data["fallback"] == "non_streaming"


async def test_an_error_event_mid_stream_is_retried(mode: str, stream: bool) -> None:
    # streamed: the format's own error event (Anthropic's overloaded_error) after some text;
    # plain: the same fault answers HTTP 529
    with FakeModelServer([Fault.stream_error(Reply("a reply the server gives up on"),
                                             after_chunks=3),
                          Reply("whole reply")]) as server:
        run = Run(server, mode, stream)
        result = await run.agent.run("hi")
    assert result.stop_reason == "completed" and result.output == "whole reply"
    assert len(server.model_requests) == 2
    (retrying,) = run.statuses("retrying")
    assert "overloaded" in retrying.message.lower()  # the server's error was read, not a cut
    assert run.text().endswith("whole reply")


async def test_an_empty_reply_is_retried_once(mode: str, stream: bool) -> None:
    with FakeModelServer([Fault.empty(), Reply("now with words")]) as server:
        result = await Run(server, mode, stream).agent.run("hi")
    assert result.output == "now with words"
    assert len(server.model_requests) == 2


async def test_a_reply_cut_by_length_is_continued_and_joined(mode: str, stream: bool) -> None:
    with FakeModelServer([Reply("First half, ", finish_reason="length"),
                          Reply("second half.")]) as server:
        run = Run(server, mode, stream)
        result = await run.agent.run("write")
    assert result.output == "First half, second half."
    assert len(run.statuses("auto_continue")) == 1
    assert "continue" in last_user_text(server.model_requests[1]).lower()


async def test_reasoning_is_streamed_and_kept(mode: str, stream: bool) -> None:
    with FakeModelServer([Reply("42", reasoning="think it through")]) as server:
        run = Run(server, mode, stream, reasoning_effort="medium")
        result = await run.agent.run("answer?")
    assert result.output == "42"
    assert result.messages[-1].reasoning == "think it through"
    deltas = [e.text for e in run.events if isinstance(e, ReasoningDelta)]
    assert "".join(deltas) == "think it through"


async def test_cancel_during_the_model_call_aborts_it(mode: str, stream: bool) -> None:
    with FakeModelServer([Reply("too late", delay=5.0)]) as server:
        run = Run(server, mode, stream)
        handle = await run.agent.start("hi")
        await wait_until(lambda: bool(server.model_requests), "the model call reached the server")
        handle.cancel()
        result = await handle
    assert result.stop_reason == "cancelled"
    assert result.messages[-1].role == "user"


async def test_cancel_during_a_tool_call_closes_the_call(mode: str, stream: bool) -> None:
    started = asyncio.Event()
    with FakeModelServer([Reply(tool_calls=[call("slow", {"seconds": 30})])]) as server:
        run = Run(server, mode, stream)
        run.agent.callbacks.append(
            lambda e: started.set() if isinstance(e, ToolCallEvent) else None)
        handle = await run.agent.start("wait")
        await started.wait()
        handle.cancel()
        result = await handle
    assert result.stop_reason == "cancelled"
    assert result.messages[-1].role == "tool" and result.messages[-1].is_error
