"""Helpers shared by the three wire renderers: ids, splitting, usage, SSE framing."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from loopwright.testing.scripted import Reply, ScriptedCall, ScriptedUsage

# One shared encoder: json.dumps() with options would build a new encoder on every call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What a renderer needs to know about the request besides the reply."""

    model: str
    input_tokens: int
    """Estimated prompt size, used when the reply gives no usage."""
    created: int
    """Unix time stamp shared by every chunk of one response."""
    include_usage: bool = False
    """Chat Completions `stream_options.include_usage`: add a usage-only final chunk."""


def dumps(value: Any) -> str:
    """Compact JSON, as real servers send it."""
    return _ENCODER.encode(value)


def json_string(text: str) -> str:
    """`text` as a JSON string literal; the hot per-delta path builds chunks from these."""
    return encode_basestring(text)


def new_id(prefix: str, length: int = 24) -> str:
    """A random id like real servers mint (`call_…`, `toolu_…`, `msg_…`), `length` hex digits."""
    return prefix + os.urandom((length + 1) // 2).hex()[:length]


def call_id(reply: Reply, scripted: ScriptedCall, prefix: str) -> str:
    """The id to send for one tool call: the quirk's empty id, the scripted id, or a new one."""
    if reply.empty_id:
        return ""
    return scripted.id if scripted.id is not None else new_id(prefix)


def split(text: str, size: int) -> list[str]:
    """Cut `text` into deltas of `size` characters, at least two when it has two characters.

    At least two so that every client test exercises delta accumulation, even for short text.
    """
    if len(text) < 2:
        return [text] if text else []
    size = min(size, (len(text) + 1) // 2)
    return [text[start : start + size] for start in range(0, len(text), size)]


def usage_of(reply: Reply, ctx: RenderContext) -> ScriptedUsage:
    """The scripted usage, or an estimate of about four characters per token."""
    if reply.usage is not None:
        return reply.usage
    reasoning_chars = len(reply.reasoning or "")
    output_chars = len(reply.text) + reasoning_chars
    output_chars += sum(len(c.name) + len(c.arguments_json) for c in reply.tool_calls)
    return ScriptedUsage(
        input_tokens=ctx.input_tokens,
        output_tokens=max(1, (output_chars + 3) // 4),
        reasoning_tokens=(reasoning_chars + 3) // 4,
    )


def sse_data(payload: str) -> bytes:
    """One `data:`-only SSE event (Chat Completions framing)."""
    return b"data: " + payload.encode() + b"\n\n"


def sse_event(name: str, payload: dict[str, Any] | str) -> bytes:
    """One named SSE event (Anthropic and Responses framing); a str payload is JSON already."""
    data = payload if isinstance(payload, str) else dumps(payload)
    return b"event: " + name.encode() + b"\ndata: " + data.encode() + b"\n\n"
