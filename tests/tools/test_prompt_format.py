"""Prompt-based tool calling (`tool_call_format="prompt"`), through `Agent` and the fake server:
catalogue in the system prompt, no native schemas, `<tool_call>` blocks read from the reply,
results back as `<tool_response>`, markup kept out of the visible text and the text deltas."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, ConfigError, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, TextDelta, ToolCallEvent, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply
from loopwright.tools.prompt_format import MarkupFilter
from loopwright.wire.text_calls.registry import MARKERS, could_be_call_prefix

FAST = RetryPolicy(base_delay=0.01, jitter=0)
CALL_ADD = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [add])
    kwargs.setdefault("tool_call_format", "prompt")
    return Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST, **kwargs)


def body(server: FakeModelServer, n: int) -> dict[str, Any]:
    data = server.model_requests[n].body
    assert isinstance(data, dict)
    return data


def visible(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("stream", [True, False])
async def test_a_prompt_mode_round_trip(stream: bool) -> None:
    events: list[Event] = []
    script = [Reply(f"Let me add them.\n{CALL_ADD}", chunk_size=3), Reply("It is 5.")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, stream=stream, callbacks=[events.append])
        result = await agent.run("2+3?")
    assert result.stop_reason == "completed" and result.output == "It is 5."
    first, second = body(server, 0), body(server, 1)
    assert "tools" not in first and "tool_choice" not in first
    system = first["messages"][0]["content"]
    assert "<tools>" in system and '"name": "add"' in system and "<tool_call>" in system
    # the next request carries the call as text and the result as a user message
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assistant, results = second["messages"][2], second["messages"][3]
    assert "tool_calls" not in assistant
    assert assistant["content"].startswith("Let me add them.\n\n<tool_call>")
    assert json.loads(assistant["content"].split("<tool_call>\n")[1].split("\n</tool_call>")[0]
                      ) == {"name": "add", "arguments": {"a": 2, "b": 3}}
    assert results["content"] == "<tool_response>\n5\n</tool_response>"
    # internal history stays native-shaped; visible text has no markup
    reply = result.messages[2]
    assert reply.content == "Let me add them." and reply.tool_calls[0].name == "add"
    assert result.messages[3].role == "tool" and result.messages[3].content == "5"
    assert visible(events) == "Let me add them.\nIt is 5."
    call_event = next(e for e in events if isinstance(e, ToolCallEvent))
    assert call_event.arguments == {"a": 2, "b": 3}


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 11])
async def test_markup_never_reaches_text_deltas_even_split_across_chunks(chunk_size: int) -> None:
    events: list[Event] = []
    text = f"Working <{CALL_ADD}\n{CALL_ADD} done <b>bold</b> <"
    script = [Reply(text, chunk_size=chunk_size), Reply("Ten.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, callbacks=[events.append]).run("x")
    shown = visible(events)
    assert "tool_call" not in shown and '"name"' not in shown
    assert shown == "Working <\n done <b>bold</b> <Ten."
    first, copy = [e.content for e in events if isinstance(e, ToolResultEvent)]
    assert first == "5" and "duplicate of call 1" in copy  # identical calls in a reply run once
    assert result.output == "Ten."


@pytest.mark.parametrize("api_mode", ["anthropic_messages", "responses"])
async def test_prompt_mode_history_is_valid_for_other_wire_formats(api_mode: str) -> None:
    script = [Reply(CALL_ADD), Reply(CALL_ADD), Reply("Done.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, api_mode=api_mode).run("add twice")
    assert result.stop_reason == "completed" and result.output == "Done."
    last = body(server, 2)
    assert "tools" not in last
    dumped = json.dumps(last)
    assert "tool_use" not in dumped and "function_call" not in dumped
    assert "tool_result" not in dumped and "function_call_output" not in dumped
    items = last["messages"] if api_mode == "anthropic_messages" else last["input"]
    roles = [m["role"] for m in items if "role" in m]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert "<tool_response" in json.dumps(items[-1])
    assert json.dumps(items).count("<tool_call>") == 2  # one per assistant turn, not twice
    assert result.messages[2].content == ""  # stored without markup, the call is a ToolCall


async def test_python_literal_arguments_are_repaired_and_validated_like_native_ones() -> None:
    events: list[Event] = []
    script = [
        Reply("<tool_call>{'name': 'add', 'arguments': {'a': '4', 'b': 1,}}</tool_call>"),
        Reply('<tool_call>{"name": "add", "arguments": {"a": "four", "b": 1}}</tool_call>'),
        Reply("ok"),
    ]
    with FakeModelServer(replies=script) as server:
        await make_agent(server, callbacks=[events.append]).run("x")
    good, bad = (e for e in events if isinstance(e, ToolResultEvent))
    assert good.content == "5" and not good.is_error
    assert bad.is_error and "could not be used" in bad.content
    assert "with: a (integer), b (integer)" in bad.content  # no sample a model could copy
    assert "could not be used" in body(server, 2)["messages"][-1]["content"]


async def test_an_unknown_tool_in_prompt_mode_gets_the_real_names() -> None:
    script = [Reply('<tool_call>{"name": "sum", "arguments": {"a": 1}}</tool_call>'), Reply("k")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server).run("x")
    response = body(server, 1)["messages"][-1]["content"]
    assert response.startswith("<tool_response>\nError: there is no tool named")
    assert "add" in response


async def test_an_unreadable_block_gets_the_exact_format_and_a_second_chance() -> None:
    events: list[Event] = []
    script = [Reply("<tool_call>add a=2 b=3</tool_call>"), Reply(CALL_ADD), Reply("5")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, callbacks=[events.append]).run("2+3?")
    assert result.output == "5"
    second = body(server, 1)["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "<tool_call>add a=2 b=3</tool_call>"
    note = second[3]["content"]
    assert "could not be read" in note
    assert '{"name": "<tool name>", "arguments": {<arguments>}}' in note
    assert [e.content for e in events if isinstance(e, ToolResultEvent)] == ["5"]
    assert "tool_call" not in visible(events)


async def test_format_corrections_are_bounded() -> None:
    bad = "<tool_call>nope</tool_call>"
    script = [Reply(bad), Reply(bad), Reply(f"I give up. {bad}")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, review_off=["narration"]).run("x")
    assert result.stop_reason == "completed"
    assert result.output == "I give up."
    assert len(server.model_requests) == 3


async def test_a_bad_block_next_to_a_good_one_is_reported_with_the_results() -> None:
    script = [Reply(f"{CALL_ADD}\n<tool_call>oops</tool_call>"), Reply("5")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server).run("x")
    assert result.output == "5"
    last = body(server, 1)["messages"][-1]["content"]
    assert last.startswith("<tool_response>\n5\n</tool_response>")
    assert "could not be read" in last
    assert not any("could not be read" in m.content for m in result.messages)


async def test_deferred_tools_in_prompt_mode_are_listed_after_loading() -> None:
    @tool(deferred=True)
    def get_forecast(city: str) -> str:
        """Weather forecast for a city."""
        return f"rain in {city}"

    script = [
        Reply('<tool_call>{"name": "tool_search", "arguments": {"query": "weather"}}</tool_call>'),
        Reply('<tool_call>{"name": "get_forecast", "arguments": {"city": "Bergen"}}</tool_call>'),
        Reply("Rain."),
    ]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, tools=[add, get_forecast]).run("weather?")
    assert result.output == "Rain."

    def listed(n: int) -> list[str]:
        system = body(server, n)["messages"][0]["content"]
        lines = system.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
        return [json.loads(line)["name"] for line in lines]

    assert listed(0) == ["add", "tool_search"]
    assert listed(1) == ["add", "tool_search", "get_forecast"]
    first_system = body(server, 0)["messages"][0]["content"]
    assert body(server, 1)["messages"][0]["content"].startswith(first_system.rsplit("\n</tools>",
                                                                                   1)[0])
    assert "rain in Bergen" in body(server, 2)["messages"][-1]["content"]


def test_markup_filter_releases_json_data_once_its_first_key_shows_it_is_no_call() -> None:
    sent: list[str] = []
    markup = MarkupFilter(sent.append)
    markup('{"res')  # no call object starts with a key "res…": shown at once
    assert "".join(sent) == '{"res'
    markup('ult": 1}')
    markup.finish('{"result": 1}')
    assert "".join(sent) == '{"result": 1}'

    sent.clear()
    markup = MarkupFilter(sent.append)
    markup('{"na')  # may become "name": held
    markup('me": "Alice", "age"')
    assert sent == []
    markup(': 31}')  # closed, and the parser says it is data: shown
    assert "".join(sent) == '{"name": "Alice", "age": 31}'

    sent.clear()
    markup = MarkupFilter(sent.append)
    for piece in ["Look: [TOOL", "_CALLS]add{}"]:
        markup(piece)
    markup.finish("Look:")
    assert "".join(sent) == "Look: "


def test_a_marker_cut_anywhere_is_held_and_a_tag_that_is_no_marker_is_shown() -> None:
    for marker in MARKERS:
        for cut in range(1, len(marker) + 1):
            assert could_be_call_prefix(marker[:cut]), marker[:cut]
        assert could_be_call_prefix(marker + "tail")
    for text in ["<b>bold</b>", "<tool_callx", "<|tool_call|y", "[TOOL_CALLX", "plain words"]:
        assert not could_be_call_prefix(text), text


async def test_an_unknown_tool_call_format_is_a_config_error() -> None:
    with FakeModelServer(replies=[]) as server, \
            pytest.raises(ConfigError, match="tool_call_format"):
        make_agent(server, tool_call_format="xml")  # at construction, not at the first run
