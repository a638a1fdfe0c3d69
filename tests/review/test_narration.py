"""The narrated-but-not-called nudge: one corrective retry per run, with an off switch."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.review.narration import described_call, narrates_tool_use
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a file."""
    return "hello"


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [read_file])
    kwargs.setdefault("review", ["auto", "narration"])  # opt-in: it reads English prose
    return Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST, **kwargs)


def last_user_text(server: FakeModelServer, n: int) -> str:
    messages = server.model_requests[n].body["messages"]
    return str(messages[-1]["content"])


@pytest.mark.parametrize("text", [
    "I'll read the file now.",
    "Sure. Let me run the tests to check.",
    "First I need to look at the config.\n\nLet me open `setup.py`:",
    "I will now call the search tool.",
    "Let's check the logs…",
])
def test_announcements_of_a_tool_action_are_narration(text: str) -> None:
    assert narrates_tool_use(text)


@pytest.mark.parametrize("text", [
    "The file says hello.",
    "Let me know if you need anything else.",
    "Should I read the file?",
    "I read the file earlier and it says hello.",
    "I'll read the file now.\n\nActually, the answer is 42: it is in the notes above.",
    "",
])
def test_answers_are_not_narration(text: str) -> None:
    assert not narrates_tool_use(text)


def test_telling_the_user_how_to_call_an_offered_tool_is_narration() -> None:
    # Qwen2.5-Coder-1.5B, bench task `stock_total`, with the apples' count in hand
    text = ("To get the number of pears in stock, you can call the `get_stock` function with "
            "the argument `\"pears\"`.")
    assert narrates_tool_use(text, ["get_stock", "add"])
    assert not narrates_tool_use(text, ["add"])  # a tool it does not have: not a missed call
    assert not narrates_tool_use("I used get_stock: there are 42 apples.", ["get_stock"])


async def test_a_narrated_call_gets_one_corrective_retry() -> None:
    script = [Reply("I'll read the file now."),
              Reply(tool_calls=[call("read_file", {"path": "a.txt"})]),
              Reply("It says hello.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server).run("what is in a.txt?")
    assert result.output == "It says hello."
    note = last_user_text(server, 1)
    assert "no tool call" in note and "make the tool call now" in note


async def test_the_nudge_happens_at_most_once_per_run() -> None:
    script = [Reply("Let me read the file."), Reply("Let me read the file first.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server).run("what is in a.txt?")
    assert result.stop_reason == "completed"
    assert len(server.model_requests) == 2
    assert result.output == "Let me read the file first."


async def test_the_nudge_can_be_switched_off() -> None:
    with FakeModelServer(replies=[Reply("I'll read the file now.")]) as server:
        result = await make_agent(server, review_off=["narration"]).run("x")
    assert result.output == "I'll read the file now." and len(server.model_requests) == 1


async def test_no_nudge_without_tools() -> None:
    with FakeModelServer(replies=[Reply("Let me check that.")]) as server:
        result = await make_agent(server, tools=[]).run("x")
    assert result.turns == 1


async def test_prompt_mode_nudge_asks_for_the_tool_call_block() -> None:
    script = [Reply("Let me open the file."),
              Reply('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'),
              Reply("hello")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, tool_call_format="prompt").run("x")
    assert result.output == "hello"
    assert "<tool_call> block" in last_user_text(server, 1)


async def test_no_nudge_to_call_when_the_request_switched_tools_off() -> None:
    # the reply that replays its call with copies gets an answer-only request; telling the model
    # there to "make the tool call now" would contradict it
    read = call("read_file", {"path": "a.txt"})
    script = [Reply(tool_calls=[read]), Reply(tool_calls=[read, read]),
              Reply("I'll read the file now."), Reply("It says hello.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server).run("What does a.txt say?")
    assert server.model_requests[2].body["tool_choice"] == "none"
    assert "asked to answer without tools" in last_user_text(server, 3)
    assert result.output == "It says hello."


@tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    raise ConnectionError("weather service unavailable (HTTP 503)")


async def test_saying_a_failed_tool_can_be_called_again_is_an_answer() -> None:
    # native mode, 0.5B, bench task `weather_down`: nudged after this answer, it invented
    # "23°C with a humidity of 50%"
    answer = ("The error message indicates that the weather service is unavailable (HTTP 503). "
              "This means that the tool is unable to retrieve the weather data for Oslo. To fix "
              "this issue, you can call the `get_weather` function again.")
    script = [Reply(tool_calls=[call("get_weather", {"city": "Oslo"})]), Reply(answer)]
    with FakeModelServer(replies=script) as server:
        # the narration check alone: after_error sends any answer after an error back once
        result = await make_agent(server, tools=[get_weather], review_off=["after_error"]).run(
            "What is the weather in Oslo right now? Use the tool.")
    assert result.stop_reason == "completed", result.error
    assert result.output == answer and len(server.model_requests) == 2


STOCK_SCHEMA = {"type": "object", "properties": {"item": {"type": "string"}},
                "required": ["item"]}
DESCRIBED = ("To get the number of pears in stock, you can call the `get_stock` function with "
             "the argument `\"pears\"`.")


def test_a_described_call_becomes_an_example_only_when_it_is_unambiguous() -> None:
    schemas = {"get_stock": STOCK_SCHEMA,
               "add": {"type": "object", "properties": {"a": {"type": "integer"}},
                       "required": ["a"]}}
    assert described_call(DESCRIBED, ["get_stock", "add"], schemas.get) == (
        '{"name": "get_stock", "arguments": {"item": "pears"}}')
    two_values = DESCRIBED.replace("`\"pears\"`", "\"pears\" or \"plums\"")
    assert described_call(two_values, ["get_stock"], schemas.get) is None
    assert described_call("you can call `add` with \"4\"", ["add"], schemas.get) is None
    both = DESCRIBED + " Then use add."
    assert described_call(both, ["get_stock", "add"], schemas.get) is None
