"""Renders a scripted reply as Anthropic Messages JSON or SSE events.

Shapes follow the recorded fixtures `anthropic_sdk_stream_tool_use.sse` and
`pyai_anthropic_tool_with_thinking.yaml`.
"""

from __future__ import annotations

import json
from typing import Any

from loopwright.testing._wire_common import (
    RenderContext,
    call_id,
    json_string,
    new_id,
    split,
    sse_event,
    usage_of,
)
from loopwright.testing.scripted import Reply, ScriptedCall, ScriptedUsage

STOP_REASONS = {
    "tool_calls": "tool_use",
    "end_turn": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}

# Anthropic really sends the ping with a space after the colon, unlike every other event.
_PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def usage_json(usage: ScriptedUsage) -> dict[str, Any]:
    """Anthropic's usage: `input_tokens` counts only the uncached part of the prompt."""
    uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    return {
        "input_tokens": max(0, uncached),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def error_json(error_type: str, message: str) -> dict[str, Any]:
    """Anthropic's error envelope."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def render_json(reply: Reply, ctx: RenderContext) -> dict[str, Any]:
    """The non-streaming `message` object."""
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append(
            {"type": "thinking", "thinking": reply.reasoning, "signature": _signature(reply)}
        )
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    content += [
        {
            "type": "tool_use",
            "id": call_id(reply, c, "toolu_01"),
            "name": c.name,
            "input": _input_object(c),
        }
        for c in reply.tool_calls
    ]
    return _message(reply, ctx, content, STOP_REASONS[reply.stop_reason], usage_of(reply, ctx))


def render_events(reply: Reply, ctx: RenderContext) -> list[bytes]:
    """The SSE events of a streamed reply, `message_start` to `message_stop`."""
    usage = usage_of(reply, ctx)
    start_usage = usage_json(usage) | {"output_tokens": 1}
    message = _message(reply, ctx, [], None, None) | {"usage": start_usage}
    events = [sse_event("message_start", {"type": "message_start", "message": message})]
    blocks = _streamed_blocks(reply)
    for index, (start_block, deltas) in enumerate(blocks):
        start = {"type": "content_block_start", "index": index, "content_block": start_block}
        events.append(sse_event("content_block_start", start))
        if index == 0:
            events.append(_PING)
        # Deltas are assembled from string literals: this is the per-token hot path.
        delta_head = f'{{"type":"content_block_delta","index":{index},"delta":'
        events += [sse_event("content_block_delta", delta_head + d + "}") for d in deltas]
        stop = {"type": "content_block_stop", "index": index}
        events.append(sse_event("content_block_stop", stop))
    if not blocks:
        events.append(_PING)
    end = {"stop_reason": STOP_REASONS[reply.stop_reason], "stop_sequence": None}
    events.append(
        sse_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": end,
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    events.append(sse_event("message_stop", {"type": "message_stop"}))
    return events


def _message(
    reply: Reply,
    ctx: RenderContext,
    content: list[dict[str, Any]],
    stop_reason: str | None,
    usage: ScriptedUsage | None,
) -> dict[str, Any]:
    return {
        "id": new_id("msg_01"),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage_json(usage) if usage else None,
    }


def _streamed_blocks(reply: Reply) -> list[tuple[dict[str, Any], list[str]]]:
    """Each content block as (its `content_block_start` payload, its deltas as JSON)."""
    size = reply.chunk_size
    blocks: list[tuple[dict[str, Any], list[str]]] = []
    if reply.reasoning:
        deltas = [_delta("thinking_delta", "thinking", p) for p in split(reply.reasoning, size)]
        deltas.append(_delta("signature_delta", "signature", _signature(reply)))
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    if reply.text:
        deltas = [_delta("text_delta", "text", p) for p in split(reply.text, size)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for scripted in reply.tool_calls:
        start = {
            "type": "tool_use",
            "id": call_id(reply, scripted, "toolu_01"),
            "name": scripted.name,
            "input": {},
        }
        # Like the real API: one empty partial_json first, then the fragments.
        pieces = ["", *split(scripted.arguments_json, size)]
        blocks.append((start, [_delta("input_json_delta", "partial_json", p) for p in pieces]))
    return blocks


def _delta(delta_type: str, field: str, value: str) -> str:
    return f'{{"type":"{delta_type}","{field}":{json_string(value)}}}'


def _signature(reply: Reply) -> str:
    return reply.signature if reply.signature is not None else new_id("Eq", 64)


def _input_object(scripted: ScriptedCall) -> Any:
    """`input` must be an object; unparseable scripted arguments are sent as a JSON string."""
    if not isinstance(scripted.arguments, str):
        return dict(scripted.arguments)
    try:
        return json.loads(scripted.arguments)
    except json.JSONDecodeError:
        return scripted.arguments
