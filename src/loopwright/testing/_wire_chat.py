"""Renders a scripted reply as OpenAI Chat Completions JSON or SSE chunks.

Shapes follow the recorded fixture `pyai_openai_chat_stream_tool_call.yaml`.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any

from loopwright.testing._wire_common import (
    RenderContext,
    call_id,
    dumps,
    json_string,
    new_id,
    split,
    sse_data,
    usage_of,
)
from loopwright.testing.scripted import Reply, ScriptedUsage

FINISH_REASONS = {
    "tool_calls": "tool_calls",
    "end_turn": "stop",
    "length": "length",
    "content_filter": "content_filter",
}


def usage_json(usage: ScriptedUsage) -> dict[str, Any]:
    """OpenAI's usage object; cache writes have no field in this format."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def render_json(reply: Reply, ctx: RenderContext) -> dict[str, Any]:
    """The non-streaming `chat.completion` object."""
    message: dict[str, Any] = {"role": "assistant", "content": _content(reply)}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id(reply, c, "call_"),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in reply.tool_calls
        ]
    elif reply.null_fields:
        message["tool_calls"] = None
    message["refusal"] = None
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": FINISH_REASONS[reply.stop_reason],
            }
        ],
        "usage": usage_json(usage_of(reply, ctx)),
    }


def render_events(reply: Reply, ctx: RenderContext) -> list[bytes]:
    """The SSE events of a streamed reply, `data: [DONE]` included."""
    envelope = _ChunkEnvelope(ctx)
    # Deltas are assembled from string literals: this is the per-token hot path of benchmarks.
    null = '"content":null,' if reply.null_fields else ""
    role_delta = '{"role":"assistant","content":' + ("null}" if reply.null_fields else '""}')
    events = [envelope.chunk(role_delta)]
    events += [
        envelope.chunk("{" + null + '"reasoning_content":' + json_string(piece) + "}")
        for piece in split(reply.reasoning or "", reply.chunk_size)
    ]
    events += [
        envelope.chunk('{"content":' + json_string(piece) + "}")
        for piece in split(reply.text, reply.chunk_size)
    ]
    events += [
        envelope.chunk("{" + null + '"tool_calls":[' + delta + "]}")
        for delta in _tool_call_deltas(reply)
    ]
    final_delta = "null" if reply.null_fields else "{}"
    events.append(envelope.chunk(final_delta, dumps(FINISH_REASONS[reply.stop_reason])))
    if ctx.include_usage:
        events.append(envelope.usage_chunk(usage_of(reply, ctx)))
    events.append(b"data: [DONE]\n\n")
    return events


def _content(reply: Reply) -> str | None:
    # Real servers send `content: null` beside tool calls, and "" for an empty answer.
    if reply.text:
        return reply.text
    return None if reply.tool_calls or reply.null_fields else ""


def _tool_call_deltas(reply: Reply) -> list[str]:
    """Per call (as JSON): a header with id, name and empty arguments, then argument fragments."""
    per_call: list[list[str]] = []
    for index, scripted in enumerate(reply.tool_calls):
        header = {
            "index": index,
            "id": call_id(reply, scripted, "call_"),
            "type": "function",
            "function": {"name": scripted.name, "arguments": ""},
        }
        fragments = [
            f'{{"index":{index},"function":{{"arguments":{json_string(piece)}}}}}'
            for piece in split(scripted.arguments_json, reply.chunk_size)
        ]
        per_call.append([dumps(header), *fragments])
    if not reply.interleave_calls:
        return [delta for deltas in per_call for delta in deltas]
    rounds = zip_longest(*per_call)
    return [delta for one_round in rounds for delta in one_round if delta is not None]


class _ChunkEnvelope:
    """Serialises the fields shared by every chunk once, so each chunk only dumps its delta."""

    def __init__(self, ctx: RenderContext) -> None:
        self._head = (
            f'{{"id":{dumps(new_id("chatcmpl-"))},"object":"chat.completion.chunk",'
            f'"created":{ctx.created},"model":{dumps(ctx.model)},"choices":'
        )
        # With include_usage, real OpenAI sends `"usage":null` on every ordinary chunk.
        self._tail = ',"usage":null}' if ctx.include_usage else "}"

    def chunk(self, delta_json: str, finish_json: str = "null") -> bytes:
        choice = (
            f'[{{"index":0,"delta":{delta_json},"logprobs":null,"finish_reason":{finish_json}}}]'
        )
        return sse_data(self._head + choice + self._tail)

    def usage_chunk(self, usage: ScriptedUsage) -> bytes:
        return sse_data(self._head + '[],"usage":' + dumps(usage_json(usage)) + "}")
