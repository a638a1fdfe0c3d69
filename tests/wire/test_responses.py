"""The OpenAI Responses adapter: input items, tools, reasoning items, stop reasons, stream events,
and the same over real HTTP through `Agent`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, messages, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ProviderError, StreamError
from loopwright.events import Event, ReasoningDelta
from loopwright.messages import Message, ModelRequest, ToolCall, ToolSpec
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.wire.base import CACHE_BOUNDARY
from loopwright.wire.responses import ResponsesFormat
from loopwright.wire.stream import StreamAccumulator

WIRE = ResponsesFormat()
FAST = RetryPolicy(base_delay=0.01, jitter=0)
SPEC = ToolSpec(name="add", description="Add.", parameters={"type": "object"})


def body_for(history: list[Message], **kw: Any) -> dict[str, Any]:
    return WIRE.build_body(ModelRequest(model="gpt", messages=history, **kw), stream=False)


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def reasoning_reply(encrypted: str | None = "enc-1") -> Message:
    item: dict[str, Any] = {"type": "reasoning", "id": "rs_1",
                            "summary": [{"type": "summary_text", "text": "sum it"}]}
    if encrypted:
        item["encrypted_content"] = encrypted
    return WIRE.parse_body({
        "status": "completed",
        "output": [item, {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                          "name": "add", "arguments": '{"a":1,"b":2}'}],
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20},
                  "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4}},
    }).message


# --- request shapes -----------------------------------------------------------------------------


def test_the_instructions_are_every_leading_system_message_as_the_history_has_them() -> None:
    first = messages.system("static rules" + CACHE_BOUNDARY + "today: Monday")
    second = messages.system("be brief")
    for leading, sent in [([first], "static rules\n\ntoday: Monday"),
                          ([first, second], "static rules\n\ntoday: Monday\n\nbe brief"),
                          ([first], "static rules\n\ntoday: Monday"),
                          ([second, first], "be brief\n\nstatic rules\n\ntoday: Monday")]:
        request = ModelRequest(model="m", messages=[*leading, messages.user("hi")])
        assert json.loads(WIRE.encode_body(request, stream=False))["instructions"] == sent
        assert WIRE.build_body(request, stream=False)["instructions"] == sent


def test_stateless_body_with_instructions_items_and_flat_tools() -> None:
    calls = messages.assistant("Let me add.", [ToolCall(id="c1", name="add",
                                                        arguments='{"a":1}')])
    body = body_for([messages.system("rules" + CACHE_BOUNDARY + "today"), messages.user("go"),
                     calls, messages.tool_result(calls.tool_calls[0], "1")],
                    tools=[SPEC], max_tokens=300, tool_choice="add")
    assert body["instructions"] == "rules\n\ntoday"
    assert body["store"] is False
    assert body["max_output_tokens"] == 300
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "message", "role": "assistant", "content": "Let me add."},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
    ]
    assert body["tools"] == [{"type": "function", "name": "add", "description": "Add.",
                              "parameters": {"type": "object"}, "strict": False}]
    assert body["tool_choice"] == {"type": "function", "name": "add"}


def test_reasoning_effort_asks_for_a_summary_and_encrypted_reasoning() -> None:
    body = body_for([messages.user("hi")], reasoning_effort="high")
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]


def test_reasoning_items_go_back_encrypted_and_without_their_server_id() -> None:
    reply = reasoning_reply()
    assert reply.reasoning == "sum it"
    body = body_for([messages.user("go"), reply, messages.tool_result(reply.tool_calls[0], "3")])
    assert body["input"][1] == {"type": "reasoning", "encrypted_content": "enc-1",
                                "summary": [{"type": "summary_text", "text": "sum it"}]}
    assert body["input"][2]["type"] == "function_call"
    assert body["input"][3] == {"type": "function_call_output", "call_id": "call_1",
                                "output": "3"}


def test_a_reply_without_reasoning_keeps_no_output_markers() -> None:
    reply = WIRE.parse_body({"output": [
        {"type": "message", "content": [{"type": "output_text", "text": "Adding."}]},
        {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": "{}"}],
        "status": "completed"}).message
    assert reply.content == "Adding." and reply.tool_calls[0].id == "call_1"
    assert reply.provider_data == {}


def test_reasoning_without_encrypted_content_cannot_go_back_statelessly() -> None:
    reply = reasoning_reply(encrypted=None)
    body = body_for([messages.user("go"), reply, messages.tool_result(reply.tool_calls[0], "3")])
    assert [item["type"] for item in body["input"]] == [
        "message", "function_call", "function_call_output"]


def test_reasoning_for_other_calls_is_stale_and_dropped() -> None:
    reply = reasoning_reply()
    changed = Message(role="assistant", tool_calls=[ToolCall(id="call_9", name="add")],
                      provider_data=reply.provider_data)
    body = body_for([messages.user("go"), changed,
                     messages.tool_result(changed.tool_calls[0], "0")])
    assert "reasoning" not in [item["type"] for item in body["input"]]


# --- parsing ------------------------------------------------------------------------------------


def test_usage_counts_cached_and_reasoning_tokens() -> None:
    body = {"status": "completed", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "x"}]}],
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20},
                  "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4}}}
    usage = WIRE.parse_body(body).usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens,
            usage.reasoning_tokens) == (50, 20, 9, 4)


@pytest.mark.parametrize(("reason", "finish"), [("max_output_tokens", "length"),
                                                ("content_filter", "content_filter")])
def test_an_incomplete_response_says_why(reason: str, finish: str) -> None:
    response = WIRE.parse_body({
        "status": "incomplete", "incomplete_details": {"reason": reason},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "cut"}]}]})
    assert response.finish_reason == finish
    assert response.message.content == "cut"


def test_a_failed_response_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="server_error") as caught:
        WIRE.parse_body({"status": "failed",
                         "error": {"code": "server_error", "message": "oops"}})
    assert caught.value.retryable


def feed(events: list[dict[str, Any]]) -> tuple[Any, StreamAccumulator]:
    parser = WIRE.stream_parser()
    acc = StreamAccumulator()
    for event in events:
        parser.feed(event["type"], json.dumps(event), acc)
    return parser, acc


@pytest.mark.parametrize("kind", ["response.failed", "error"])
def test_failure_events_mid_stream_are_retryable_stream_errors(kind: str) -> None:
    event: dict[str, Any] = {"type": kind, "message": "overloaded"}
    if kind == "response.failed":
        event = {"type": kind, "response": {"status": "failed",
                                            "error": {"code": "server_error", "message": "x"}}}
    with pytest.raises(StreamError) as caught:
        feed([event])
    assert caught.value.retryable


def test_items_that_arrive_only_whole_are_still_read() -> None:
    parser, acc = feed([
        {"type": "response.output_item.done", "output_index": 0, "item": {
            "type": "reasoning", "id": "rs", "encrypted_content": "e",
            "summary": [{"type": "summary_text", "text": "thought"}]}},
        {"type": "response.output_item.done", "output_index": 1, "item": {
            "type": "message", "content": [{"type": "output_text", "text": "hello"}]}},
        {"type": "response.output_item.done", "output_index": 2, "item": {
            "type": "function_call", "call_id": "c", "name": "add", "arguments": "{}"}},
        {"type": "response.completed", "response": {"status": "completed", "usage": None}},
    ])
    response = acc.build()
    assert parser.finished
    assert (response.message.reasoning, response.message.content) == ("thought", "hello")
    assert response.message.tool_calls == [ToolCall(id="c", name="add", arguments="{}")]
    assert response.finish_reason == "tool_calls"
    assert response.message.provider_data["responses"]["output"][0]["encrypted_content"] == "e"


def test_summary_parts_are_separated() -> None:
    _, acc = feed([
        {"type": "response.reasoning_summary_text.delta", "output_index": 0,
         "summary_index": 0, "delta": "first"},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0,
         "summary_index": 1, "delta": "second"},
        {"type": "response.incomplete", "response": {
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}},
    ])
    response = acc.build()
    assert response.message.reasoning == "first\n\nsecond"
    assert response.finish_reason == "length"


# --- over HTTP, through Agent -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_reasoning_round_trip_over_http(stream: bool) -> None:
    events: list[Event] = []
    with FakeModelServer([
        Reply(tool_calls=[call("add", {"a": 1, "b": 2})], reasoning="adding", signature="enc"),
        Reply("3"),
    ]) as server:
        agent = Agent("gpt-5", base_url=server.base_url, api_key="k", api_mode="responses",
                      tools=[add], stream=stream, reasoning_effort="low", retry=FAST,
                      callbacks=[events.append])
        result = await agent.run("1+2?")
    assert result.output == "3"
    first, second = (r for r in server.model_requests)
    assert first.path == "/v1/responses"
    assert first.headers["authorization"] == "Bearer k"
    assert first.body["reasoning"] == {"effort": "low", "summary": "auto"}
    kinds = [item["type"] for item in second.body["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert second.body["input"][1]["encrypted_content"] == "enc"
    assert result.messages[2].reasoning == "adding"
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "adding"
