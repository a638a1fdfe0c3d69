"""Real provider traffic replayed straight through each adapter's parsers (stream parser +
accumulator, or parse_body), and the follow-up request each adapter builds from what it parsed
compared with the one the real client sent."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from loopwright import messages
from loopwright.messages import Message, ModelRequest, ToolCall
from loopwright.wire import get_wire_format

Recorded = Callable[[str], Any]
Replay = Callable[[str, str], Awaitable[Any]]  # see conftest.replay


def _without_cache_marks(value: Any) -> Any:
    """The adapter adds cache breakpoints the recording's client did not; compare without them."""
    if isinstance(value, dict):
        return {k: _without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_marks(v) for v in value]
    return value


# --- Anthropic Messages -------------------------------------------------------------------------


async def test_anthropic_stream_with_ping_and_split_json_yields_one_tool_call(
    recorded: Recorded, replay: Replay
) -> None:
    out = await replay("anthropic_messages", recorded("anthropic_sdk_stream_tool_use.sse"))
    msg = out.response.message
    assert out.finished
    assert out.text_deltas == ["I", "'ll check the current weather in Paris for you."]
    assert msg.content == "I'll check the current weather in Paris for you."
    assert msg.tool_calls == [ToolCall(id="toolu_01NRLabsLyVHZPKxbKvkfSMn", name="get_weather",
                                       arguments='{"location": "Paris"}')]
    assert out.response.finish_reason == "tool_calls"
    assert out.response.model == "claude-sonnet-4-20250514"
    assert (out.response.usage.input_tokens, out.response.usage.output_tokens) == (377, 65)
    assert msg.provider_data == {}  # nothing to send back verbatim without thinking


def test_anthropic_thinking_reply_keeps_reasoning_and_signature(recorded: Recorded) -> None:
    cassette = recorded("pyai_anthropic_tool_with_thinking.yaml")
    body = cassette["interactions"][0]["response"]["parsed_body"]
    response = get_wire_format("anthropic_messages").parse_body(body)
    msg = response.message
    thinking = body["content"][0]
    assert msg.reasoning == thinking["thinking"]
    stored = msg.provider_data["anthropic_messages"]["content"]
    assert stored[0] == {"type": "thinking", "thinking": thinking["thinking"],
                         "signature": thinking["signature"]}
    assert msg.content.startswith("I'll help you find the largest city")
    assert msg.tool_calls == [ToolCall(id="toolu_01YGzqpRE16Vricda3Aqcejo",
                                       name="get_user_country", arguments="{}")]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (398, 155)


def test_anthropic_follow_up_sends_the_thinking_block_back_unchanged(recorded: Recorded) -> None:
    cassette = recorded("pyai_anthropic_tool_with_thinking.yaml")
    first, second = cassette["interactions"]
    wire = get_wire_format("anthropic_messages")
    reply = wire.parse_body(first["response"]["parsed_body"])
    question = first["request"]["parsed_body"]["messages"][0]["content"][0]["text"]
    history = [messages.user(question), reply.message,
               messages.tool_result(reply.message.tool_calls[0], "Mexico")]
    body = wire.build_body(ModelRequest(model="claude-sonnet-4-0", messages=history),
                           stream=False)
    expected = second["request"]["parsed_body"]["messages"]
    expected[2]["content"][0].pop("is_error")  # false is the default; the adapter omits it
    assert _without_cache_marks(body["messages"]) == expected
    final = wire.parse_body(second["response"]["parsed_body"])
    assert "Mexico City" in final.message.content
    assert final.finish_reason == "end_turn"
    assert final.message.provider_data == {}


# --- OpenAI Responses ---------------------------------------------------------------------------


async def test_responses_stream_function_call(recorded: Recorded, replay: Replay) -> None:
    cassette = recorded("pyai_openai_responses_stream_function_call.yaml")
    out = await replay("responses", cassette["interactions"][0]["response"]["body"]["string"])
    assert out.finished
    assert out.response.message.tool_calls == [
        ToolCall(id="call_kL0PCQV7M2WMoVX8V8OtYSAL", name="get_capital",
                 arguments='{"country":"France"}')]
    assert out.response.message.content == ""
    assert out.response.finish_reason == "tool_calls"
    assert out.response.model == "gpt-4o-2024-08-06"
    assert (out.response.usage.input_tokens, out.response.usage.output_tokens) == (255, 16)


async def test_responses_stream_text_answer(recorded: Recorded, replay: Replay) -> None:
    cassette = recorded("pyai_openai_responses_stream_function_call.yaml")
    out = await replay("responses", cassette["interactions"][1]["response"]["body"]["string"])
    assert out.response.message.content == "The capital of France is Paris."
    assert len(out.text_deltas) == 7
    assert out.response.finish_reason == "end_turn"
    assert (out.response.usage.input_tokens, out.response.usage.output_tokens) == (278, 9)


async def test_responses_follow_up_input_items(recorded: Recorded, replay: Replay) -> None:
    cassette = recorded("pyai_openai_responses_stream_function_call.yaml")
    first, second = cassette["interactions"]
    out = await replay("responses", first["response"]["body"]["string"])
    call = out.response.message.tool_calls[0]
    history = [messages.user("What is the capital of France?"), out.response.message,
               messages.tool_result(call, "Paris")]
    body = get_wire_format("responses").build_body(
        ModelRequest(model="gpt-4o", messages=history), stream=True)
    sent = second["request"]["parsed_body"]["input"]
    # the recording's client used the item id as call_id; the API pairs by call_id either way
    assert [item.get("type", "message") for item in body["input"]] == [
        item.get("type", "message") for item in sent]
    assert body["input"][0]["content"] == sent[0]["content"]
    assert (body["input"][1]["name"], body["input"][1]["arguments"]) == (
        sent[1]["name"], sent[1]["arguments"])
    assert body["input"][1]["call_id"] == body["input"][2]["call_id"] == call.id
    assert body["input"][2]["output"] == "Paris"
    assert body["store"] is False and body["stream"] is True


# --- Chat Completions ---------------------------------------------------------------------------


async def test_chat_stream_tool_call_then_answer(recorded: Recorded, replay: Replay) -> None:
    cassette = recorded("pyai_openai_chat_stream_tool_call.yaml")
    first, second = cassette["interactions"]
    out = await replay("chat_completions", first["response"]["body"]["string"])
    assert out.finished
    assert out.response.message.tool_calls == [
        ToolCall(id="call_ZR5UUuTt3pf61kjwAJIYdVMj", name="get_capital",
                 arguments='{"country":"UK"}')]
    assert out.response.finish_reason == "tool_calls"
    assert (out.response.usage.input_tokens, out.response.usage.output_tokens) == (53, 15)
    answer = await replay("chat_completions", second["response"]["body"]["string"])
    assert answer.response.finish_reason == "end_turn"
    assert answer.response.message.content == "".join(answer.text_deltas)
    assert "London" in answer.response.message.content
    assert (answer.response.usage.input_tokens, answer.response.usage.output_tokens) == (78, 9)


async def test_chat_follow_up_messages_match_the_recording(
    recorded: Recorded, replay: Replay
) -> None:
    cassette = recorded("pyai_openai_chat_stream_tool_call.yaml")
    first, second = cassette["interactions"]
    out = await replay("chat_completions", first["response"]["body"]["string"])
    sent = second["request"]["parsed_body"]["messages"]
    history = [messages.user(sent[0]["content"]), out.response.message,
               messages.tool_result(out.response.message.tool_calls[0], "London")]
    body = get_wire_format("chat_completions").build_body(
        ModelRequest(model="gpt-4o-mini", messages=history), stream=True)
    assert body["messages"] == sent


def test_chat_empty_tool_call_id_gets_a_usable_id(recorded: Recorded) -> None:
    cassette = recorded("pyai_gemini_openai_compat_tool_call_empty_id.yaml")
    first, second = cassette["interactions"]
    wire = get_wire_format("chat_completions")
    reply = wire.parse_body(first["response"]["parsed_body"])
    (call,) = reply.message.tool_calls
    assert call.id and call.name == "get_current_time" and json.loads(call.arguments) == {}
    assert reply.finish_reason == "tool_calls"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (35, 12)
    history: list[Message] = [messages.user("What is the current time?"), reply.message,
                              messages.tool_result(call, "Noon")]
    body = wire.build_body(ModelRequest(model="gemini", messages=history), stream=False)
    assert body["messages"][1]["tool_calls"][0]["id"] == body["messages"][2]["tool_call_id"]
    answer = wire.parse_body(second["response"]["parsed_body"])
    assert answer.message.content == "The current time is Noon."
    assert answer.finish_reason == "end_turn"
