"""The loop's contract (DESIGN §1, §6), through `Agent` against the fake model server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loopwright import Agent, ToolContext, notes, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import wait_until

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [add])
    kwargs.setdefault("retry", FAST)
    return Agent("test-model", base_url=server.base_url, api_key="k", **kwargs)


def chat_messages(server: FakeModelServer, n: int) -> list[dict[str, Any]]:
    body = server.model_requests[n].body
    assert body is not None
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def tool_messages(server: FakeModelServer, n: int) -> list[dict[str, Any]]:
    return [m for m in chat_messages(server, n) if m["role"] == "tool"]


@pytest.mark.parametrize("stream", [True, False])
async def test_a_tool_round_trip_completes_with_the_result_fed_back(stream: bool) -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply(text="It is 5.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, stream=stream, callbacks=[events.append]).run("2+3?")
    assert result.stop_reason == "completed"
    assert result.output == "It is 5."
    assert result.turns == 2
    assert tool_messages(server, 1)[0]["content"] == "5"
    types = [e.type for e in events]
    assert types[:4] == ["turn_start", "model_call", "tool_call", "tool_result"]
    assert types[-1] == "done" and types.count("turn_end") == 2
    assert result.usage.requests == 2 and result.usage.input_tokens > 0


@pytest.mark.parametrize("raw", ['{"a": 1, "b": 2,', "{'a': 1, 'b': 2}",
                                 '```json\n{"a":1,"b":2}\n```', '"{\\"a\\": 1, \\"b\\": 2}"'])
async def test_broken_json_arguments_are_repaired_then_run(raw: str) -> None:
    script = [Reply(tool_calls=[call("add", raw)]), Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server).run("go")
    assert tool_messages(server, 1)[0]["content"] == "3"


async def test_unrecoverable_arguments_never_run_the_tool() -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def record(path: str) -> str:
        """Record a path."""
        ran.append({"path": path})
        return "ok"

    script = [Reply(tool_calls=[call("record", "path equals foo please")]), Reply(text="sorry")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, tools=[record]).run("go")
    assert ran == []
    error = tool_messages(server, 1)[0]["content"]
    assert "could not be used" in error and "The tool was not run" in error
    assert "with: path (string)" in error and "..." not in error  # the format, no sample
    assert result.stop_reason == "completed"


async def test_arguments_failing_validation_get_a_precise_error() -> None:
    script = [Reply(tool_calls=[call("add", {"a": "two"})]), Reply(text="sorry")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server).run("go")
    error = tool_messages(server, 1)[0]["content"]
    assert "'a'" in error and "missing required argument 'b'" in error


async def test_a_call_cut_by_the_output_limit_is_not_run() -> None:
    ran: list[str] = []

    @tool
    def write(text: str) -> str:
        """Write text."""
        ran.append(text)
        return "written"

    script = [Reply(tool_calls=[call("write", '{"text": "a very long te')], finish_reason="length"),
              Reply(text="I will write less.")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server, tools=[write]).run("go", raise_on_error=False)
    assert ran == []
    assert "cut off by the output-token limit" in tool_messages(server, 1)[0]["content"]


async def test_a_tool_exception_becomes_an_error_result_and_the_run_goes_on() -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise RuntimeError("disk on fire")

    script = [Reply(tool_calls=[call("explode")]), Reply(text="it failed")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, tools=[explode]).run("go")
    assert "RuntimeError: disk on fire" in tool_messages(server, 1)[0]["content"]
    assert result.stop_reason == "completed"


async def test_a_call_to_an_unknown_tool_names_the_real_ones() -> None:
    script = [Reply(tool_calls=[call("ad", {"a": 1})]), Reply(text="oops")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server).run("go")
    assert "no tool named 'ad'" in tool_messages(server, 1)[0]["content"]
    assert "add" in tool_messages(server, 1)[0]["content"]


async def test_the_third_identical_call_is_intercepted_and_a_fourth_takes_the_tools_away(
        ) -> None:
    ran: list[int] = []

    @tool(read_only=True)
    def probe(n: int) -> int:
        """Probe."""
        ran.append(n)
        return n

    same = Reply(tool_calls=[call("probe", {"n": 1})])
    with FakeModelServer(replies=[same, same, same, same, Reply("1")]) as server:
        result = await make_agent(server, tools=[probe]).run("go")
    assert ran == [1, 1]
    assert "same arguments 3 times" in tool_messages(server, 3)[-1]["content"]
    assert "tool_choice" not in server.model_requests[3].body  # warned, it may change course
    assert server.model_requests[4].body["tool_choice"] == "none"
    assert result.stop_reason == "completed" and result.output == "1"
    with FakeModelServer(replies=[same] * 5) as server:  # calling when asked to answer stops
        result = await make_agent(server, tools=[probe]).run("go")
    assert result.stop_reason == "loop_detected"
    assert len(server.model_requests) == 5


async def test_an_intercepted_loop_that_changes_course_goes_on() -> None:
    same = Reply(tool_calls=[call("add", {"a": 1, "b": 1})])
    script = [same, same, same, Reply(tool_calls=[call("add", {"a": 2, "b": 2})]),
              Reply(text="4")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server).run("go")
    assert result.stop_reason == "completed" and result.output == "4"


@pytest.mark.parametrize("stream", [True, False])
async def test_a_reply_cut_by_length_is_continued_and_joined(stream: bool) -> None:
    script = [Reply(text="Hello, ", finish_reason="length"),
              Reply(text="world", finish_reason="length"), Reply(text="!", finish_reason="length")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, stream=stream).run("greet")
    assert result.output == "Hello, world!"
    assert result.stop_reason == "completed"
    assert len(server.model_requests) == 3  # max 2 continuations
    assert chat_messages(server, 1)[-1]["content"] == notes.text(notes.CONTINUE)


async def test_the_last_round_tells_the_model_to_answer_without_tools() -> None:
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 1})]), Reply(text="2")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, max_turns=2).run("go")
    assert notes.text(notes.LAST_ROUND) in chat_messages(server, 1)[-1]["content"]
    assert notes.text(notes.LAST_ROUND) not in json.dumps(chat_messages(server, 0))
    assert result.stop_reason == "completed"


async def test_tool_calls_on_the_last_round_stop_with_max_turns() -> None:
    again = Reply(tool_calls=[call("add", {"a": 1, "b": 1})])
    with FakeModelServer(replies=[again, Reply(tool_calls=[call("add", {"a": 2, "b": 2})])]
                         ) as server:
        result = await make_agent(server, max_turns=2).run("go")
    assert result.stop_reason == "max_turns"
    last = result.messages[-1]
    assert last.role == "tool" and "turn limit" in last.content


async def test_steering_is_drained_into_the_next_turn() -> None:
    agent_box: list[Agent] = []

    @tool(read_only=True)
    def check() -> str:
        """Check."""
        assert agent_box[0].steer("also check the README")
        return "checked"

    script = [Reply(tool_calls=[call("check")]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, tools=[check])
        agent_box.append(agent)
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert chat_messages(server, 1)[-1] == {"role": "user", "content": "also check the README"}


async def test_a_pending_steer_keeps_the_run_going() -> None:
    steered: list[bool] = []
    box: list[Agent] = []

    def on_event(event: Event) -> None:
        if event.type == "text_delta" and not steered:
            steered.append(box[0].steer("one more thing"))

    with FakeModelServer(replies=[Reply(text="first answer"), Reply(text="second answer")]
                         ) as server:
        agent = make_agent(server, callbacks=[on_event])
        box.append(agent)
        result = await agent.run("go")
    assert steered == [True]
    assert result.output == "second answer" and result.turns == 2
    assert chat_messages(server, 1)[-1]["content"] == "one more thing"


@pytest.mark.parametrize("stream", [True, False])
async def test_cancel_aborts_the_in_flight_call(stream: bool) -> None:
    with FakeModelServer(replies=[Reply(text="slow", delay=10)]) as server:
        agent = make_agent(server, stream=stream)
        handle = await agent.start("go")
        await wait_until(lambda: bool(server.model_requests), "the model call reached the server")
        assert agent.cancel()
        result = await asyncio.wait_for(handle, timeout=3)
    assert result.stop_reason == "cancelled"
    assert [m.role for m in result.messages] == ["system", "user"]


async def test_cancel_during_tools_leaves_a_resumable_history() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Take forever."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    with FakeModelServer(replies=[Reply(tool_calls=[call("slow")])]) as server:
        agent = make_agent(server, tools=[slow])
        handle = await agent.start("go")
        await asyncio.wait_for(started.wait(), 5)
        handle.cancel()
        result = await asyncio.wait_for(handle, timeout=3)
    assert result.stop_reason == "cancelled"
    assert result.messages[-1].role == "tool" and "cancelled" in result.messages[-1].content


async def test_a_provider_error_ends_the_run_with_stop_reason_error() -> None:
    from loopwright.testing import Fault

    events: list[Event] = []
    with FakeModelServer(replies=[Fault.status(400, body={"error": {"message": "bad model"}})]
                         ) as server:
        result = await make_agent(server, callbacks=[events.append]).run("go", raise_on_error=False)
    assert result.stop_reason == "error"
    assert result.error is not None and "bad model" in result.error
    assert events[-1].type == "error"


async def test_many_runs_share_one_agent_each_with_its_own_history() -> None:
    def handler(request: Any) -> Reply:
        messages = request.body["messages"]
        prompt = messages[1]["content"]
        if messages[-1]["role"] == "tool":
            return Reply(text=f"{prompt}={messages[-1]['content']}")
        n = int(prompt.split()[-1])
        return Reply(tool_calls=[call("add", {"a": n, "b": n})])

    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server)
        results = await asyncio.gather(*(agent.run(f"double {n}") for n in range(30)))
    assert [r.output for r in results] == [f"double {n}={2 * n}" for n in range(30)]


def test_chat_is_a_sync_wrapper_returning_the_text() -> None:
    with FakeModelServer(replies=[Reply(text="hi there")]) as server:
        assert make_agent(server).chat("hello") == "hi there"


async def test_a_tool_gets_its_context_injected(tmp_path: Any) -> None:
    seen: list[ToolContext] = []

    @tool
    def where(ctx: ToolContext) -> str:
        """Where am I."""
        seen.append(ctx)
        return str(ctx.workdir)

    with FakeModelServer(replies=[Reply(tool_calls=[call("where")]), Reply(text="ok")]) as server:
        result = await make_agent(server, tools=[where], workdir=str(tmp_path)).run("go")
    assert seen[0].workdir == tmp_path.resolve()
    assert seen[0].session_id == result.session_id
    assert tool_messages(server, 1)[0]["content"] == str(tmp_path.resolve())
