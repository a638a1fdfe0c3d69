"""Renders a scripted reply as OpenAI Responses JSON or SSE events.

Shapes follow the recorded fixture `pyai_openai_responses_stream_function_call.yaml`.
"""

from __future__ import annotations

from typing import Any

from loopwright.testing._wire_common import (
    RenderContext,
    call_id,
    dumps,
    json_string,
    new_id,
    split,
    sse_event,
    usage_of,
)
from loopwright.testing.scripted import Reply, ScriptedUsage

# Stop reasons that end a response as `incomplete`, with the reason the API gives.
_INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def usage_json(usage: ScriptedUsage) -> dict[str, Any]:
    """The Responses usage object."""
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def render_json(reply: Reply, ctx: RenderContext) -> dict[str, Any]:
    """The non-streaming `response` object."""
    return _Response(reply, ctx).final()


def render_events(reply: Reply, ctx: RenderContext) -> list[bytes]:
    """The SSE events, `response.created` to `response.completed` / `response.incomplete`."""
    response = _Response(reply, ctx)
    started = dumps(response.started())
    events = [
        sse_event(name, f'{{"type":"{name}","response":{started}}}')
        for name in ("response.created", "response.in_progress")
    ]
    for output_index, item in enumerate(response.items):
        events.append(_item_event("response.output_item.added", output_index, _opened(item)))
        events += _item_body_events(reply, output_index, item)
        events.append(_item_event("response.output_item.done", output_index, item))
    final = response.final()
    terminal = "response.completed" if final["status"] == "completed" else "response.incomplete"
    events.append(sse_event(terminal, {"type": terminal, "response": final}))
    return events


class _Response:
    """The output items of one reply (ids minted once) and the response envelopes around them."""

    def __init__(self, reply: Reply, ctx: RenderContext) -> None:
        self._ctx = ctx
        self._usage = usage_of(reply, ctx)
        self._id = new_id("resp_", 48)
        incomplete = _INCOMPLETE_REASONS.get(reply.stop_reason)
        self._status = "incomplete" if incomplete else "completed"
        self._incomplete_details = {"reason": incomplete} if incomplete else None
        self.items = _output_items(reply, self._status)

    def started(self) -> dict[str, Any]:
        return self._envelope("in_progress", [], None, None)

    def final(self) -> dict[str, Any]:
        usage = usage_json(self._usage)
        return self._envelope(self._status, self.items, self._incomplete_details, usage)

    def _envelope(
        self,
        status: str,
        output: list[dict[str, Any]],
        incomplete_details: dict[str, str] | None,
        usage: dict[str, Any] | None,
    ) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "response",
            "created_at": self._ctx.created,
            "status": status,
            "error": None,
            "incomplete_details": incomplete_details,
            "model": self._ctx.model,
            "output": output,
            "parallel_tool_calls": True,
            "usage": usage,
            "metadata": {},
        }


def _output_items(reply: Reply, status: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        reasoning: dict[str, Any] = {
            "type": "reasoning",
            "id": new_id("rs_", 48),
            "summary": [{"type": "summary_text", "text": reply.reasoning}],
        }
        if reply.signature is not None:
            reasoning["encrypted_content"] = reply.signature
        items.append(reasoning)
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": new_id("msg_", 48),
                "status": status,
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": new_id("fc_", 48),
            "call_id": call_id(reply, c, "call_"),
            "name": c.name,
            "arguments": c.arguments_json,
            "status": "completed",
        }
        for c in reply.tool_calls
    ]
    return items


def _opened(item: dict[str, Any]) -> dict[str, Any]:
    """An item as `response.output_item.added` announces it: in progress, nothing in it yet."""
    if item["type"] == "reasoning":
        return item | {"summary": []}
    if item["type"] == "message":
        return item | {"status": "in_progress", "content": []}
    return item | {"arguments": "", "status": "in_progress"}


def _item_event(name: str, output_index: int, item: dict[str, Any]) -> bytes:
    return sse_event(name, {"type": name, "output_index": output_index, "item": item})


def _item_body_events(reply: Reply, output_index: int, item: dict[str, Any]) -> list[bytes]:
    where = {"item_id": item["id"], "output_index": output_index}
    if item["type"] == "reasoning":
        return _reasoning_events(reply, where)
    if item["type"] == "message":
        return _text_events(reply, where)
    arguments = item["arguments"]
    events = _deltas("response.function_call_arguments.delta", where, arguments, reply.chunk_size)
    events.append(_typed("response.function_call_arguments.done", where, arguments=arguments))
    return events


def _reasoning_events(reply: Reply, where: dict[str, Any]) -> list[bytes]:
    text = reply.reasoning or ""
    where = where | {"summary_index": 0}
    events = [_typed("response.reasoning_summary_part.added", where, part=_summary_part(""))]
    events += _deltas("response.reasoning_summary_text.delta", where, text, reply.chunk_size)
    events.append(_typed("response.reasoning_summary_text.done", where, text=text))
    events.append(_typed("response.reasoning_summary_part.done", where, part=_summary_part(text)))
    return events


def _text_events(reply: Reply, where: dict[str, Any]) -> list[bytes]:
    where = where | {"content_index": 0}
    events = [_typed("response.content_part.added", where, part=_text_part(""))]
    events += _deltas("response.output_text.delta", where, reply.text, reply.chunk_size)
    events.append(_typed("response.output_text.done", where, text=reply.text))
    events.append(_typed("response.content_part.done", where, part=_text_part(reply.text)))
    return events


def _deltas(name: str, where: dict[str, Any], text: str, size: int) -> list[bytes]:
    """One `delta` event per piece of `text`; the envelope is serialised once for all of them."""
    head = dumps({"type": name, **where})[:-1] + ',"delta":'
    return [sse_event(name, head + json_string(piece) + "}") for piece in split(text, size)]


def _typed(name: str, where: dict[str, Any], **fields: Any) -> bytes:
    return sse_event(name, {"type": name, **where, **fields})


def _summary_part(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}
