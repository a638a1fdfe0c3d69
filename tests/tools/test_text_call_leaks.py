"""What Qwen2.5-Coder-0.5B really wrote on llama.cpp (issue 12), replayed through the fake server in
native mode, streaming and not: call JSON never reaches the text the user sees, a call to a tool
that does not exist is answered with the real names instead of becoming the answer, and a cut
call fragment is never the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, TextDelta, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file."""
    return f"contents of {path}: 42"


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    return Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k", retry=FAST,
                 tools=[read_file, add], **kwargs)


def shown(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def results(events: list[Event]) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent)]


CALL = '{"name": "read_file", "arguments": {"path": "notes.txt"}}'
LEAKS = {
    "wrapped_in_tool_response": f"<tool_response>\n{CALL}\n</tool_response>",
    "prose_then_fenced_json": f"I will read the file.\n```json\n{CALL}\n```",
    "prose_then_bare_json_line": f"Let me check the file first.\n{CALL}",
    "qwen_tool_call_then_prose": f"<tool_call>\n{CALL}\n</tool_call>\nWaiting for the result.",
}


@pytest.mark.parametrize("chunk_size", [1, 3, 7])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("leak", sorted(LEAKS))
async def test_call_json_never_reaches_the_text_the_user_sees(leak: str, stream: bool,
                                                              chunk_size: int) -> None:
    events: list[Event] = []
    script = [Reply(LEAKS[leak], chunk_size=chunk_size), Reply("The file says 42.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, stream=stream, callbacks=[events.append]).run("?")
    assert result.output == "The file says 42."
    assert [r.content for r in results(events)] == ["contents of notes.txt: 42"]
    text = shown(events)
    for fragment in ('"name"', "read_file", "arguments", "```", "tool_response", "tool_call"):
        assert fragment not in text
    assert text.endswith("The file says 42.")


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("reply", [
    '{"name": "sum_numbers", "arguments": {"numbers": [3, 4]}}',
    '```json\n{"name": "sum_numbers", "arguments": {"numbers": [3, 4]}}\n```',
    '<tool_call>\n{"name": "sum_numbers", "arguments": {"numbers": [3, 4]}}\n</tool_call>',
])
async def test_a_text_call_to_a_tool_that_does_not_exist_gets_the_real_names(
        reply: str, stream: bool) -> None:
    events: list[Event] = []
    script = [Reply(reply, chunk_size=5),
              Reply('{"name": "add", "arguments": {"a": 3, "b": 4}}'), Reply("7")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, stream=stream, callbacks=[events.append]).run("3+4?")
    assert result.stop_reason == "completed" and result.output == "7"
    unknown, good = results(events)
    assert unknown.is_error and unknown.name == "sum_numbers"
    assert "no tool named 'sum_numbers'" in unknown.content
    assert "add" in unknown.content and "read_file" in unknown.content
    told = server.model_requests[1].body["messages"][-1]
    assert told["role"] == "tool" and "no tool named 'sum_numbers'" in told["content"]
    assert good.content == "7"
    assert "sum_numbers" not in shown(events)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("fragment", [
    '{"name": "read_file", "arguments":',
    'Reading it now.\n{"name": "read_file", "arguments": {"pa',
    '<tool_call>\n{"name": "read_file", "arguments":',
])
async def test_a_cut_call_fragment_is_never_the_answer(fragment: str, stream: bool) -> None:
    events: list[Event] = []
    script = [Reply(fragment, chunk_size=4, finish_reason="length"),
              Reply(CALL), Reply("It says 42.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, stream=stream, callbacks=[events.append]).run("?")
    assert result.output == "It says 42."
    first = results(events)[0]
    assert first.is_error and "cut off" in first.content
    assert "read_file" not in shown(events) and "arguments" not in shown(events)


async def test_a_cut_fragment_to_an_unknown_tool_is_not_the_answer_either() -> None:
    script = [Reply('{"name": "sum_numbers", "arguments": {"numbers": [1,', chunk_size=3),
              Reply("3")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server).run("1+2?")
    assert result.output == "3" and result.turns == 2
    assert "no tool named 'sum_numbers'" in server.model_requests[1].body["messages"][-1]["content"]


@tool
def write_file(path: str, content: str) -> str:
    """Write a text file."""
    return f"wrote {len(content)} characters to {path}"


@pytest.mark.parametrize("stream", [True, False])
async def test_a_long_text_call_is_held_whole_and_run(stream: bool) -> None:
    content = "\n".join(f"def f{i}(x):\n    return {{'a': [x]}}" for i in range(2500))
    call = json.dumps({"name": "write_file", "arguments": {"path": "big.py", "content": content}})
    events: list[Event] = []
    script = [Reply(f"Writing it.\n{call}", chunk_size=64), Reply("Done.")]
    # a model name no profile knows, on a server that runs open weights (vLLM)
    with FakeModelServer(replies=script, flavor="vllm") as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, stream=stream,
                      tools=[write_file], callbacks=[events.append])
        result = await agent.run("write it")
    assert result.output == "Done."
    assert [r.content for r in results(events)] == [f"wrote {len(content)} characters to big.py"]
    assert shown(events) == "Writing it.\nDone."
