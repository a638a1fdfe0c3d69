"""The three wire formats the fake server speaks, checked against what real servers send."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from loopwright.testing import FakeModelServer, Reply, ScriptedUsage, call

from ._sse import chat_chunks, named_events

# One client for the module: httpx.post() builds a new client and TLS context on every call.
HTTP = httpx.Client(timeout=10)

CHAT = "/chat/completions"
MESSAGES = "/messages"
RESPONSES = "/responses"


def ask(reply: Reply, path: str, **body: Any) -> httpx.Response:
    """Serve one reply and fetch it with a plain httpx client."""
    with FakeModelServer([reply]) as server:
        payload = {"model": "test-model", **body}
        response = HTTP.post(server.base_url + path, json=payload, timeout=5)
    assert response.status_code == 200, response.text
    return response


def stream(reply: Reply, path: str, **body: Any) -> str:
    response = ask(reply, path, stream=True, **body)
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.headers["content-type"].startswith("text/event-stream")
    return response.text


# -- Chat Completions -------------------------------------------------------------------------


def test_chat_json_text_reply_has_message_finish_reason_and_usage() -> None:
    data = ask(Reply("Paris is the capital."), CHAT, messages=[]).json()

    assert data["object"] == "chat.completion"
    assert data["model"] == "test-model"
    choice = data["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == "Paris is the capital."
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"
    usage = data["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0}
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 0}


def test_chat_json_tool_calls_have_ids_string_arguments_and_null_content() -> None:
    reply = Reply(tool_calls=[call("add", {"a": 1, "b": 2}), call("neg", {"x": 3}, id="mine")])
    choice = ask(reply, CHAT, messages=[]).json()["choices"][0]

    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    first, second = choice["message"]["tool_calls"]
    assert first["id"].startswith("call_") and len(first["id"]) > 10
    assert first["type"] == "function"
    assert first["function"]["name"] == "add"
    assert json.loads(first["function"]["arguments"]) == {"a": 1, "b": 2}
    assert second["id"] == "mine"


def test_chat_json_reasoning_and_scripted_usage() -> None:
    usage = ScriptedUsage(
        input_tokens=100, output_tokens=20, cache_read_tokens=60, reasoning_tokens=7
    )
    data = ask(Reply("ok", reasoning="Let me think.", usage=usage), CHAT, messages=[]).json()

    assert data["choices"][0]["message"]["reasoning_content"] == "Let me think."
    assert data["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "total_tokens": 120,
        "prompt_tokens_details": {"cached_tokens": 60},
        "completion_tokens_details": {"reasoning_tokens": 7},
    }


@pytest.mark.parametrize(
    ("finish_reason", "expected"),
    [("length", "length"), ("max_tokens", "length"), ("content_filter", "content_filter")],
)
def test_chat_finish_reasons_render_as_openai_names(finish_reason: str, expected: str) -> None:
    data = ask(Reply("cut", finish_reason=finish_reason), CHAT, messages=[]).json()
    assert data["choices"][0]["finish_reason"] == expected


def test_chat_estimated_usage_grows_with_the_request() -> None:
    small = ask(Reply("x"), CHAT, messages=[{"role": "user", "content": "hi"}]).json()
    large = ask(Reply("x"), CHAT, messages=[{"role": "user", "content": "hi" * 400}]).json()
    assert large["usage"]["prompt_tokens"] > small["usage"]["prompt_tokens"] + 150


def test_chat_stream_splits_text_and_ends_with_finish_chunk_and_done() -> None:
    text = stream(Reply("The capital of the UK is London.", chunk_size=5), CHAT, messages=[])
    chunks = chat_chunks(text)

    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks[1:-1]]
    assert len(pieces) == 7
    assert "".join(pieces) == "The capital of the UK is London."
    assert chunks[-1]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert all("usage" not in c for c in chunks), "usage only when include_usage is asked"


def test_chat_stream_usage_chunk_has_empty_choices_when_include_usage() -> None:
    text = stream(Reply("hi there"), CHAT, messages=[], stream_options={"include_usage": True})
    chunks = chat_chunks(text)

    *ordinary, usage_chunk = chunks
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] >= 1
    assert set(usage_chunk["usage"]) >= {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert all(c["usage"] is None for c in ordinary)  # as the recorded OpenAI stream does
    assert ordinary[-1]["choices"][0]["finish_reason"] == "stop"


def test_chat_stream_tool_call_header_then_argument_fragments() -> None:
    arguments = {"country": "UK", "detail": "full"}
    text = stream(Reply(tool_calls=[call("get_capital", arguments)]), CHAT, messages=[])
    deltas = [c["choices"][0]["delta"] for c in chat_chunks(text)]

    calls = [d["tool_calls"][0] for d in deltas if d and "tool_calls" in d]
    header, *fragments = calls
    assert header["index"] == 0
    assert header["id"].startswith("call_")
    assert header["type"] == "function"
    assert header["function"] == {"name": "get_capital", "arguments": ""}
    assert len(fragments) >= 2
    assert all(set(f) == {"index", "function"} for f in fragments)
    assert json.loads("".join(f["function"]["arguments"] for f in fragments)) == arguments
    assert deltas[-1] == {}
    assert chat_chunks(text)[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_chat_stream_interleaves_parallel_calls_by_index() -> None:
    reply = Reply(
        tool_calls=[call("a", {"value": "first call"}), call("b", {"value": "second call"})],
        interleave_calls=True,
    )
    deltas = [c["choices"][0]["delta"] for c in chat_chunks(stream(reply, CHAT, messages=[]))]
    calls = [d["tool_calls"][0] for d in deltas if d and "tool_calls" in d]

    indexes = [c["index"] for c in calls]
    assert indexes[:4] == [0, 1, 0, 1]
    for index, expected in ((0, "first call"), (1, "second call")):
        arguments = "".join(c["function"]["arguments"] for c in calls if c["index"] == index)
        assert json.loads(arguments) == {"value": expected}


def test_chat_stream_reasoning_comes_as_reasoning_content_deltas() -> None:
    text = stream(Reply("done", reasoning="First, think it over."), CHAT, messages=[])
    deltas = [c["choices"][0]["delta"] for c in chat_chunks(text)]
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas if d)
    assert reasoning == "First, think it over."
    assert sum("reasoning_content" in d for d in deltas if d) >= 2


def test_chat_quirk_empty_tool_call_id() -> None:
    reply = Reply(tool_calls=[call("get_current_time")], empty_id=True)
    json_call = ask(reply, CHAT, messages=[]).json()["choices"][0]["message"]["tool_calls"][0]
    deltas = [c["choices"][0]["delta"] for c in chat_chunks(stream(reply, CHAT, messages=[]))]
    header = next(d["tool_calls"][0] for d in deltas if d and "tool_calls" in d)

    assert json_call["id"] == ""
    assert json_call["function"]["arguments"] == "{}"
    assert header["id"] == ""


def test_chat_quirk_null_fields() -> None:
    reply = Reply(tool_calls=[call("f", {"k": 1})], null_fields=True)
    chunks = chat_chunks(stream(reply, CHAT, messages=[]))
    message = ask(Reply("", null_fields=True), CHAT, messages=[]).json()["choices"][0]["message"]

    assert chunks[0]["choices"][0]["delta"]["content"] is None
    assert chunks[1]["choices"][0]["delta"]["content"] is None
    assert chunks[-1]["choices"][0]["delta"] is None
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert message["content"] is None and message["tool_calls"] is None


def test_malformed_arguments_are_sent_verbatim() -> None:
    reply = Reply(tool_calls=[call("add", '{"a": 1,')])
    json_call = ask(reply, CHAT, messages=[]).json()["choices"][0]["message"]["tool_calls"][0]
    deltas = [c["choices"][0]["delta"] for c in chat_chunks(stream(reply, CHAT, messages=[]))]
    streamed = "".join(
        d["tool_calls"][0]["function"]["arguments"] for d in deltas if d and "tool_calls" in d
    )
    assert json_call["function"]["arguments"] == '{"a": 1,'
    assert streamed == '{"a": 1,'


# -- Anthropic Messages -----------------------------------------------------------------------

# Event order of the recorded `anthropic_sdk_stream_tool_use.sse` (text, then one tool_use).
RECORDED_ANTHROPIC_TOOL_USE_EVENTS = [
    "message_start",
    "content_block_start",
    "ping",
    "content_block_delta",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
]


def _collapse_repeats(names: list[str]) -> list[str]:
    return [name for i, name in enumerate(names) if i == 0 or names[i - 1] != name]


def test_anthropic_json_has_thinking_text_and_tool_use_blocks() -> None:
    reply = Reply(
        "Let me look that up.",
        reasoning="The user wants the country.",
        signature="sig-123",
        tool_calls=[call("get_user_country")],
    )
    data = ask(reply, MESSAGES, messages=[], max_tokens=100).json()

    assert data["type"] == "message" and data["role"] == "assistant"
    thinking, text, tool_use = data["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": "The user wants the country.",
        "signature": "sig-123",
    }
    assert text == {"type": "text", "text": "Let me look that up."}
    assert tool_use["type"] == "tool_use"
    assert tool_use["id"].startswith("toolu_")
    assert tool_use["name"] == "get_user_country"
    assert tool_use["input"] == {}
    assert data["stop_reason"] == "tool_use"
    assert data["stop_sequence"] is None


def test_anthropic_usage_counts_only_uncached_input() -> None:
    usage = ScriptedUsage(
        input_tokens=100, output_tokens=9, cache_read_tokens=70, cache_write_tokens=5
    )
    data = ask(Reply("hi", usage=usage), MESSAGES, messages=[]).json()
    assert data["usage"] == {
        "input_tokens": 25,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 70,
        "output_tokens": 9,
    }


@pytest.mark.parametrize(
    ("finish_reason", "expected"),
    [(None, "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")],
)
def test_anthropic_stop_reasons(finish_reason: str | None, expected: str) -> None:
    data = ask(Reply("x", finish_reason=finish_reason), MESSAGES, messages=[]).json()
    assert data["stop_reason"] == expected


def test_anthropic_stream_follows_the_recorded_event_order() -> None:
    reply = Reply(
        "I'll check the weather.", tool_calls=[call("get_weather", {"location": "Paris"})]
    )
    events = named_events(stream(reply, MESSAGES, messages=[]))
    assert _collapse_repeats([name for name, _ in events]) == RECORDED_ANTHROPIC_TOOL_USE_EVENTS


def test_anthropic_stream_deltas_rebuild_text_arguments_and_thinking() -> None:
    reply = Reply(
        "Checking Paris now.",
        reasoning="Weather needs a tool.",
        signature="sig-abc",
        tool_calls=[call("get_weather", {"location": "Paris"})],
    )
    events = named_events(stream(reply, MESSAGES, messages=[]))
    deltas = [p for name, p in events if name == "content_block_delta"]
    by_index: dict[int, list[dict[str, Any]]] = {}
    for payload in deltas:
        by_index.setdefault(payload["index"], []).append(payload["delta"])

    thinking = [d["thinking"] for d in by_index[0] if d["type"] == "thinking_delta"]
    assert "".join(thinking) == "Weather needs a tool."
    assert by_index[0][-1] == {"type": "signature_delta", "signature": "sig-abc"}
    assert "".join(d["text"] for d in by_index[1]) == "Checking Paris now."
    partial = [d["partial_json"] for d in by_index[2]]
    assert partial[0] == ""
    assert json.loads("".join(partial)) == {"location": "Paris"}

    starts = [p["content_block"] for name, p in events if name == "content_block_start"]
    assert [b["type"] for b in starts] == ["thinking", "text", "tool_use"]
    assert starts[2]["input"] == {} and starts[2]["id"].startswith("toolu_")
    message_delta = next(p for name, p in events if name == "message_delta")
    assert message_delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert message_delta["usage"]["output_tokens"] >= 1
    assert events[0][1]["message"]["usage"]["input_tokens"] >= 1


def test_anthropic_ping_is_padded_like_the_real_api() -> None:
    assert 'event: ping\ndata: {"type": "ping"}\n\n' in stream(Reply("hi"), MESSAGES, messages=[])


def test_anthropic_stream_of_empty_reply_is_still_complete() -> None:
    names = [name for name, _ in named_events(stream(Reply(), MESSAGES, messages=[]))]
    assert names == ["message_start", "ping", "message_delta", "message_stop"]


# -- OpenAI Responses -------------------------------------------------------------------------


def test_responses_json_output_items() -> None:
    reply = Reply(
        "Calling it.", reasoning="Need the capital.", tool_calls=[call("get_capital", {"c": "FR"})]
    )
    data = ask(reply, RESPONSES, input=[]).json()

    assert data["object"] == "response" and data["status"] == "completed"
    assert data["incomplete_details"] is None
    reasoning, message, function_call = data["output"]
    assert reasoning["type"] == "reasoning" and reasoning["id"].startswith("rs_")
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Need the capital."}]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"] == [{"type": "output_text", "text": "Calling it.", "annotations": []}]
    assert function_call["type"] == "function_call"
    assert function_call["call_id"].startswith("call_")
    assert function_call["id"].startswith("fc_")
    assert function_call["name"] == "get_capital"
    assert json.loads(function_call["arguments"]) == {"c": "FR"}
    usage = data["usage"]
    assert set(usage) == {
        "input_tokens",
        "input_tokens_details",
        "output_tokens",
        "output_tokens_details",
        "total_tokens",
    }
    assert usage["output_tokens_details"]["reasoning_tokens"] >= 1


def test_responses_length_cut_is_incomplete_with_reason() -> None:
    data = ask(Reply("partial", finish_reason="length"), RESPONSES, input=[]).json()
    assert data["status"] == "incomplete"
    assert data["incomplete_details"] == {"reason": "max_output_tokens"}


def test_responses_stream_text_and_function_call_events() -> None:
    reply = Reply("The capital is Paris.", tool_calls=[call("get_capital", {"country": "France"})])
    events = named_events(stream(reply, RESPONSES, input=[]))
    names = [name for name, _ in events]

    assert names[:2] == ["response.created", "response.in_progress"]
    assert events[0][1]["response"]["status"] == "in_progress"
    text = "".join(p["delta"] for n, p in events if n == "response.output_text.delta")
    assert text == "The capital is Paris."
    arg_deltas = [p["delta"] for n, p in events if n == "response.function_call_arguments.delta"]
    assert len(arg_deltas) >= 2
    done = next(p for n, p in events if n == "response.function_call_arguments.done")
    assert "".join(arg_deltas) == done["arguments"] == '{"country":"France"}'
    added = [p["item"] for n, p in events if n == "response.output_item.added"]
    finished = [p["item"] for n, p in events if n == "response.output_item.done"]
    assert (
        [i["type"] for i in added] == [i["type"] for i in finished] == ["message", "function_call"]
    )
    assert added[1]["arguments"] == "" and finished[1]["status"] == "completed"
    assert names[-1] == "response.completed"
    completed = events[-1][1]["response"]
    assert completed["output"] == finished
    assert completed["usage"]["total_tokens"] >= 1


def test_responses_stream_reasoning_summary_deltas() -> None:
    events = named_events(stream(Reply("ok", reasoning="Think about it."), RESPONSES, input=[]))
    summary = "".join(p["delta"] for n, p in events if n == "response.reasoning_summary_text.delta")
    assert summary == "Think about it."
    assert events[-1][1]["response"]["output"][0]["type"] == "reasoning"


def test_responses_stream_length_cut_ends_with_response_incomplete() -> None:
    events = named_events(stream(Reply("partial", finish_reason="length"), RESPONSES, input=[]))
    name, payload = events[-1]
    assert name == "response.incomplete"
    assert payload["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
