"""Native mode with a server that answers with tool calls written as text (`text_tool_calls`):
well-formed calls to known tools run as if native; anything else stays the answer."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent, TextDelta, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply

FAST = RetryPolicy(base_delay=0.01, jitter=0)
# a server that runs open weights itself: a model name no profile knows ("test-model") has its
# text calls read there, not behind a proxy or a hosted API (`review.plan.reads_text_calls`)
SERVER = "vllm"


@tool(read_only=True)
def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city."""
    return f"{city}: sunny for {days} day(s)"


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                 tools=[get_weather], **kwargs)


def tool_results(events: list[Event]) -> list[str]:
    return [e.content for e in events if isinstance(e, ToolResultEvent)]


FAMILIES = {
    "hermes": 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
              '"days": 2}}\n</tool_call>',
    "hermes_unclosed_string_arguments": '<tool_call>{"name": "get_weather", "arguments": '
                                        '"{\\"city\\": \\"Paris\\", \\"days\\": 2}"}',
    "llama3_json": '{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}',
    "mistral_list": '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", '
                    '"days": 2}}]',
    "mistral_named": '[TOOL_CALLS]get_weather{"city": "Paris", "days": 2}',
    "pythonic": "[get_weather(city='Paris', days=2)]",
    "qwen3_coder_xml": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                       "</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n"
                       "</tool_call>",
    "glm4_arg_key": "Checking.<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris"
                    "</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
    "gpt_oss_harmony": "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
                       "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                       '<|message|>{"city": "Paris", "days": 2}<|call|>',
    "deepseek_v3": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                   '```json\n{"city": "Paris", "days": 2}\n```<｜tool▁call▁end｜>'
                   "<｜tool▁calls▁end｜>",
    "deepseek_v31": "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
                    '{"city": "Paris", "days": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    "kimi_k2": "Checking.<|tool_calls_section_begin|> <|tool_call_begin|> functions.get_weather:0 "
               '<|tool_call_argument_begin|> {"city": "Paris", "days": 2} <|tool_call_end|> '
               "<|tool_calls_section_end|>",
    "granite": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]',
    "llamacpp_wrapper": '{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris", '
                        '"days": 2}}}',
    "llama31_python_tag": '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", '
                          '"days": 2}}<|eom_id|>',
    "fenced_json": 'Checking.\n```json\n{"name": "get_weather", "arguments": {"city": "Paris", '
                   '"days": 2}}\n```',
}


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("family", sorted(FAMILIES))
async def test_text_calls_to_known_tools_run_as_native(family: str, stream: bool) -> None:
    events: list[Event] = []
    script = [Reply(FAMILIES[family], chunk_size=4), Reply("Sunny.")]
    with FakeModelServer(replies=script, flavor=SERVER) as server:
        result = await make_agent(server, stream=stream, callbacks=[events.append]).run("w?")
    assert result.output == "Sunny."
    assert tool_results(events) == ["Paris: sunny for 2 day(s)"]
    # the next request carries a real native call and its result
    messages = server.model_requests[1].body["messages"]
    assistant, result_message = messages[-2], messages[-1]
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert result_message == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"],
                              "content": "Paris: sunny for 2 day(s)"}
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "get_weather" not in shown and shown.endswith("Sunny.")
    for marker in ("<|", "<｜", "<tool_call", "```", "[TOOL_CALLS]", '"city"'):
        assert marker not in shown
    assert any(isinstance(e, StatusEvent) and e.kind == "text_tool_calls" for e in events)


async def test_the_switch_turns_text_calls_off() -> None:
    text = FAMILIES["hermes"]
    with FakeModelServer(replies=[Reply(text)], flavor=SERVER) as server:
        result = await make_agent(server, text_tool_calls=False).run("w?")
    assert result.output == text and result.turns == 1


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("text", [
    'The record is {"name": "Alice", "age": 31}.',
    'The API takes {"name": "delete_all", "arguments": {}} as its body.',
    "<tool_call>not json</tool_call>",
    "[1, 2, 3] are the first numbers.",
    '```json\n{"city": "Paris"}\n```',
])
async def test_text_that_is_not_a_call_to_a_known_tool_is_the_answer(text: str,
                                                                      stream: bool) -> None:
    events: list[Event] = []
    with FakeModelServer(replies=[Reply(text, chunk_size=3)], flavor=SERVER) as server:
        result = await make_agent(server, stream=stream, callbacks=[events.append]).run("x")
    assert result.output == text and result.turns == 1
    assert tool_results(events) == []
    if not text.startswith("<tool_call>"):  # markup is held back from deltas even if not a call
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
