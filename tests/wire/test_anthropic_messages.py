"""The Anthropic Messages adapter: request shapes, cache breakpoints, thinking blocks, stream
events, and the same over real HTTP through `Agent`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, messages, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError, StreamError
from loopwright.events import Event, ReasoningDelta
from loopwright.messages import Message, ModelRequest, ToolCall, ToolSpec
from loopwright.testing import FakeModelServer, Reply, ScriptedUsage, call
from loopwright.wire.anthropic_messages import AnthropicMessagesFormat
from loopwright.wire.base import CACHE_BOUNDARY
from loopwright.wire.stream import StreamAccumulator

WIRE = AnthropicMessagesFormat()
FAST = RetryPolicy(base_delay=0.01, jitter=0)
SPEC = ToolSpec(name="add", description="Add.", parameters={"type": "object"})


def body_for(history: list[Message], **kw: Any) -> dict[str, Any]:
    return WIRE.build_body(ModelRequest(model="claude", messages=history, **kw), stream=False)


def cache_marks(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


def two_calls() -> Message:
    return messages.assistant("", [ToolCall(id="t1", name="add", arguments='{"a": 1}'),
                                   ToolCall(id="t2", name="add", arguments='{"a": 2}')])


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- request shapes -----------------------------------------------------------------------------


def test_system_prompt_is_top_level_and_split_at_the_cache_boundary() -> None:
    body = body_for([messages.system("static rules" + CACHE_BOUNDARY + "today: Monday"),
                     messages.user("hi")])
    assert body["system"] == [
        {"type": "text", "text": "static rules", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "today: Monday"},
    ]
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_every_leading_system_message_is_sent_as_the_history_has_them_at_each_turn() -> None:
    first = messages.system("static rules" + CACHE_BOUNDARY + "today: Monday")
    second = messages.system("be brief")
    rules = [{"type": "text", "text": "static rules", "cache_control": {"type": "ephemeral"}},
             {"type": "text", "text": "today: Monday"}]
    brief = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    for leading, sent in [([first], rules), ([first, second], rules + brief), ([first], rules),
                          ([second, first], brief + rules)]:
        request = ModelRequest(model="claude", messages=[*leading, messages.user("hi")])
        assert json.loads(WIRE.encode_body(request, stream=False))["system"] == sent
        assert WIRE.build_body(request, stream=False)["system"] == sent


def test_tool_results_and_a_following_note_share_one_user_turn_results_first() -> None:
    calls = two_calls()
    body = body_for([messages.system("s"), messages.user("go"), calls,
                     messages.tool_result(calls.tool_calls[0], "1"),
                     messages.tool_result(calls.tool_calls[1], "boom", is_error=True),
                     messages.user("reminder: be brief")])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use", "tool_use"]
    last = body["messages"][2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "tool_result", "text"]
    assert last[0]["tool_use_id"] == "t1" and "is_error" not in last[0]
    assert last[1]["tool_use_id"] == "t2" and last[1]["is_error"] is True
    assert last[2]["text"] == "reminder: be brief"
    assert body["messages"][1]["content"][0]["input"] == {"a": 1}


def test_the_first_turn_is_always_a_user_turn() -> None:
    body = body_for([messages.system("s"), messages.assistant("I was saying"),
                     messages.user("go on")])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


def test_breakpoints_on_system_last_two_turns_and_last_tool_never_more_than_four() -> None:
    history = [messages.system("s"), messages.user("a"), messages.assistant("b"),
               messages.user("c")]
    other = ToolSpec(name="sub", description="Sub.", parameters={"type": "object"})
    body = body_for(history, tools=[SPEC, other])
    assert cache_marks(body) == 4
    assert "cache_control" in body["messages"][-1]["content"][-1]
    assert "cache_control" in body["messages"][-2]["content"][-1]
    assert "cache_control" not in body["messages"][0]["content"][-1]
    assert "cache_control" not in body["tools"][0] and "cache_control" in body["tools"][1]


@pytest.mark.parametrize("last_assistant", ["calls", "thinking only", "marked text"])
def test_the_sent_breakpoints_are_the_built_bodys(last_assistant: str) -> None:
    # the last two turns are joined from cached JSON with the breakpoint written into their
    # last block's text; a turn ending in a thinking block, or in a block already carrying a
    # cache_control (from stored provider blocks), is built as objects: the same body each way
    call = ToolCall(id="t1", name="add", arguments='{"a": 1}')
    stored: list[dict[str, Any]] = {
        "calls": [],
        "thinking only": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
        "marked text": [{"type": "text", "text": "Hi.", "cache_control": {"type": "x"}}],
    }[last_assistant]
    reply = Message(role="assistant", content="Hi." if last_assistant == "marked text" else "",
                    provider_data={"anthropic_messages": {"content": stored}} if stored else {})
    history = [messages.system(f"static{CACHE_BOUNDARY}run"), messages.user("go"),
               messages.assistant("", [call]), messages.tool_result(call, "1"), reply,
               messages.user("and?")]
    request = ModelRequest(model="claude", messages=history, tools=[SPEC])
    sent = WIRE.encode_body(request, stream=False)
    assert json.loads(sent) == WIRE.build_body(request, stream=False)
    assert sent.count(b'"cache_control"') == cache_marks(WIRE.build_body(request, stream=False))


def test_breakpoints_do_not_leak_into_later_turns() -> None:
    history = [messages.system("s"), messages.user("a"), messages.assistant("b"),
               messages.user("c")]
    body_for(history, tools=[SPEC])
    history += [messages.assistant("d"), messages.user("e")]
    body = body_for(history, tools=[SPEC])
    assert cache_marks(body) == 4
    assert ["cache_control" in m["content"][-1] for m in body["messages"]] == [
        False, False, False, True, True]


def test_max_tokens_defaults_because_anthropic_requires_it() -> None:
    assert body_for([messages.user("hi")])["max_tokens"] == 8192
    assert body_for([messages.user("hi")], max_tokens=100)["max_tokens"] == 100


@pytest.mark.parametrize(("effort", "budget"), [("low", 1024), ("medium", 4096),
                                                ("high", 16384)])
def test_reasoning_effort_becomes_a_thinking_budget_below_max_tokens(effort: str,
                                                                     budget: int) -> None:
    body = body_for([messages.user("hi")], reasoning_effort=effort, temperature=0.2)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] > budget
    assert "temperature" not in body  # the API refuses a temperature with thinking on


def test_a_small_max_tokens_is_raised_above_the_thinking_budget() -> None:
    body = body_for([messages.user("hi")], reasoning_effort="medium", max_tokens=2000)
    assert body["max_tokens"] == 4096 + 2000


def test_thinking_waits_out_a_tool_round_that_was_made_without_it() -> None:
    calls = two_calls()  # e.g. made by a chat-completions provider before a fallback
    history = [messages.user("go"), calls, messages.tool_result(calls.tool_calls[0], "1"),
               messages.tool_result(calls.tool_calls[1], "2")]
    assert "thinking" not in body_for(history, reasoning_effort="high")
    history += [messages.assistant("done"), messages.user("and now?")]
    assert "thinking" in body_for(history, reasoning_effort="high")


def test_an_unknown_reasoning_effort_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="reasoning_effort"):
        body_for([messages.user("hi")], reasoning_effort="extreme")


def test_tool_choice_is_translated() -> None:
    history = [messages.user("hi")]
    assert body_for(history, tools=[SPEC], tool_choice="required")["tool_choice"] == {
        "type": "any"}
    assert body_for(history, tools=[SPEC], tool_choice="add")["tool_choice"] == {
        "type": "tool", "name": "add"}


def test_foreign_call_ids_are_made_acceptable_consistently() -> None:
    calls = messages.assistant("", [ToolCall(id="functions.add:0", name="add")])
    body = body_for([messages.user("go"), calls,
                     messages.tool_result(calls.tool_calls[0], "3")])
    use_id = body["messages"][1]["content"][0]["id"]
    assert use_id == "functions_add_0"
    assert body["messages"][2]["content"][0]["tool_use_id"] == use_id


def test_broken_arguments_are_repaired_into_an_input_object() -> None:
    calls = messages.assistant("", [ToolCall(id="t1", name="add", arguments="{'a': 1,}")])
    body = body_for([messages.user("go"), calls, messages.tool_result(calls.tool_calls[0], "x")])
    assert body["messages"][1]["content"][0]["input"] == {"a": 1}


# --- thinking blocks ----------------------------------------------------------------------------


def thinking_reply() -> Message:
    return WIRE.parse_body({
        "content": [
            {"type": "thinking", "thinking": "let me add", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }).message


def test_thinking_and_redacted_blocks_go_back_unchanged_in_order() -> None:
    reply = thinking_reply()
    assert reply.reasoning == "let me add"
    body = body_for([messages.user("go"), reply, messages.tool_result(reply.tool_calls[0], "3")])
    content = body["messages"][1]["content"]
    assert content[0] == {"type": "thinking", "thinking": "let me add", "signature": "sig-1"}
    assert content[1] == {"type": "redacted_thinking", "data": "opaque"}
    assert content[2] == {"type": "text", "text": "Adding."}
    assert content[3]["type"] == "tool_use" and content[3]["input"] == {"a": 1, "b": 2}


def test_a_plain_replys_call_arguments_read_as_json_dumps_writes_them() -> None:
    value = {"path": "caf\u00e9/\u2028x", "n": [1, 2.5, None, True], "deep": {"k": "\"q\""}}
    reply = WIRE.parse_body({"content": [{"type": "text", "text": "Reading."},
                                         {"type": "tool_use", "id": "t1", "name": "read",
                                          "input": value}],
                             "stop_reason": "tool_use"}).message
    assert reply.tool_calls[0].arguments == json.dumps(value)
    assert reply.provider_data == {}  # no reasoning: the block sequence is not kept


def test_a_reply_with_only_a_redacted_thinking_block_keeps_its_blocks() -> None:
    reply = WIRE.parse_body({"content": [{"type": "redacted_thinking", "data": "opaque"},
                                         {"type": "tool_use", "id": "t1", "name": "add",
                                          "input": {}}],
                             "stop_reason": "tool_use"}).message
    assert reply.tool_calls[0].arguments == "{}"
    assert reply.provider_data["anthropic_messages"]["content"] == [
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "t1", "name": "add"}]


def test_thinking_blocks_for_other_tool_calls_are_stale_and_not_sent() -> None:
    reply = thinking_reply()
    changed = Message(role="assistant", content=reply.content,
                      tool_calls=[ToolCall(id="t9", name="add", arguments="{}")],
                      provider_data=reply.provider_data)
    body = body_for([messages.user("go"), changed,
                     messages.tool_result(changed.tool_calls[0], "0")])
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use"]


def test_edited_text_keeps_the_thinking_of_unchanged_calls() -> None:
    reply = thinking_reply()
    edited = Message(role="assistant", content="Adding now.", tool_calls=reply.tool_calls,
                     provider_data=reply.provider_data)
    body = body_for([messages.user("go"), edited, messages.tool_result(edited.tool_calls[0], "3")])
    content = body["messages"][1]["content"]
    assert [b["type"] for b in content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert content[2]["text"] == "Adding now."


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("stop", "finish"), [
    ("tool_use", "tool_calls"), ("end_turn", "end_turn"), ("stop_sequence", "end_turn"),
    ("max_tokens", "length"), ("refusal", "content_filter")])
def test_stop_reasons_are_normalised(stop: str, finish: str) -> None:
    content = [{"type": "tool_use", "id": "t", "name": "add", "input": {}}] if stop == \
        "tool_use" else [{"type": "text", "text": "x"}]
    response = WIRE.parse_body({"content": content, "stop_reason": stop})
    assert response.finish_reason == finish


def test_input_tokens_count_the_whole_prompt_including_cache() -> None:
    usage = WIRE.parse_body({
        "content": [{"type": "text", "text": "x"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 50, "output_tokens": 7},
    }).usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
            usage.output_tokens) == (160, 100, 50, 7)


@pytest.mark.parametrize(("error_type", "retryable"), [("overloaded_error", True),
                                                       ("api_error", True),
                                                       ("invalid_request_error", False)])
def test_an_error_event_mid_stream_is_a_stream_error(error_type: str, retryable: bool) -> None:
    parser = WIRE.stream_parser()
    acc = StreamAccumulator()
    parser.feed("message_start", '{"type":"message_start","message":{"usage":{}}}', acc)
    data = json.dumps({"type": "error", "error": {"type": error_type, "message": "busy"}})
    with pytest.raises(StreamError) as caught:
        parser.feed("error", data, acc)
    assert caught.value.retryable is retryable
    assert error_type in str(caught.value)


def test_a_streamed_signature_is_kept_with_its_thinking() -> None:
    parser = WIRE.stream_parser()
    acc = StreamAccumulator()
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "m"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "sig"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 4}},
        {"type": "message_stop"},
    ]
    for event in events:
        parser.feed(event["type"], json.dumps(event), acc)
    assert parser.finished
    response = acc.build()
    assert response.message.reasoning == "hmm" and response.message.content == "ok"
    assert response.message.provider_data["anthropic_messages"]["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "ok"}]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 4)


# --- over HTTP, through Agent -------------------------------------------------------------------


def agent_for(server: FakeModelServer, **kw: Any) -> Agent:
    return Agent("anthropic:claude-test", base_url=server.url, api_key="sk-ant", retry=FAST,
                 **kw)


async def test_requests_use_x_api_key_and_anthropic_version_headers() -> None:
    with FakeModelServer([Reply("hi")]) as server:
        result = await agent_for(server).run("hello")
    assert result.output == "hi"
    (request,) = server.model_requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body["model"] == "claude-test"


@pytest.mark.parametrize("stream", [True, False])
async def test_signatures_survive_a_tool_round_over_http(stream: bool) -> None:
    events: list[Event] = []
    with FakeModelServer([
        Reply(tool_calls=[call("add", {"a": 1, "b": 2})], reasoning="need a sum",
              signature="sig-abc"),
        Reply("3"),
    ]) as server:
        result = await agent_for(server, tools=[add], stream=stream, reasoning_effort="low",
                                 callbacks=[events.append]).run("1+2?")
    assert result.output == "3"
    first, second = (r.body for r in server.model_requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assistant = second["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "need a sum", "signature": "sig-abc"}
    assert assistant[1]["type"] == "tool_use" and assistant[1]["input"] == {"a": 1, "b": 2}
    assert result.messages[2].reasoning == "need a sum"
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "need a sum"


async def test_cache_reads_and_writes_reach_the_run_usage() -> None:
    usage = ScriptedUsage(input_tokens=1000, output_tokens=20, cache_read_tokens=800,
                          cache_write_tokens=150)
    with FakeModelServer([Reply("hi", usage=usage)]) as server:
        result = await agent_for(server).run("hello")
    assert (result.usage.input_tokens, result.usage.cache_read_tokens,
            result.usage.cache_write_tokens, result.usage.output_tokens) == (1000, 800, 150, 20)
