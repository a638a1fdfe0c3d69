"""Anthropic Messages replies: a whole reply's usage and kept blocks, and the SSE stream parser.

The request side and the conventions both sides share are in `anthropic_messages`.
"""

from __future__ import annotations

import json
from typing import Any

from loopwright.errors import ContextOverflowError, StreamError
from loopwright.messages import FinishReason, Usage
from loopwright.wire.base import says_overflow
from loopwright.wire.stream import StreamAccumulator

MODE = "anthropic_messages"

STOP_REASONS: dict[str, FinishReason] = {
    "tool_use": "tool_calls",
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
# Errors that will fail the same way if retried.
FATAL_ERRORS = frozenset({"invalid_request_error", "authentication_error", "permission_error",
                           "not_found_error", "request_too_large"})


def usage_from_wire(data: dict[str, Any] | None, usage: Usage | None = None) -> Usage:
    """Merge an Anthropic usage object into `usage` (`anthropic_messages`' docstring says how the
    totals are counted)."""
    usage = usage or Usage(requests=1)
    if not data:
        return usage
    fresh = data.get("input_tokens")
    read = data.get("cache_read_input_tokens")
    write = data.get("cache_creation_input_tokens")
    if fresh is not None or read is not None or write is not None:
        # a later event (message_delta) may repeat only some of the counts
        uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
        if fresh is not None:
            uncached = int(fresh)
        if read is not None:
            usage.cache_read_tokens = int(read)
        if write is not None:
            usage.cache_write_tokens = int(write)
        usage.input_tokens = uncached + usage.cache_read_tokens + usage.cache_write_tokens
    if data.get("output_tokens") is not None:
        usage.output_tokens = int(data["output_tokens"])
    return usage


def kept_blocks(content: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What a reply keeps of its blocks: the sequence, when it holds reasoning that must go
    back verbatim."""
    if any(b["type"] in REASONING_BLOCKS for b in content):
        return {MODE: {"content": content}}
    return None


def _store(acc: StreamAccumulator, content: list[dict[str, Any]]) -> None:
    kept = kept_blocks(content)
    if kept is not None:
        acc.provider_data = kept


def stored_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.get("thinking") or "",
                "signature": block.get("signature") or ""}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data") or ""}
    if kind == "text":
        return {"type": "text", "text": block.get("text") or ""}
    if kind == "tool_use":  # a position marker: the input is rebuilt from the ToolCall
        return {"type": "tool_use", "id": block.get("id") or "", "name": block.get("name") or ""}
    return None  # server-side tool blocks are not sent back


class _OpenBlock:
    """A content block being streamed; text pieces are joined once, at its stop."""

    __slots__ = ("block", "parts")

    def __init__(self, block: dict[str, Any]) -> None:
        self.block = block
        self.parts: list[str] = []


class AnthropicStreamParser:
    """Feeds Anthropic SSE events (`message_start` … `message_stop`) into the accumulator."""

    def __init__(self) -> None:
        self.finished = False
        self._open: dict[int, _OpenBlock] = {}
        self._content: list[dict[str, Any]] = []

    def feed(self, event: str | None, data: str, acc: StreamAccumulator) -> None:
        payload = json.loads(data)
        kind = payload.get("type") or event
        if kind == "content_block_delta":
            self._delta(payload["index"], payload["delta"], acc)
        elif kind == "content_block_start":
            self._start(payload["index"], payload["content_block"], acc)
        elif kind == "content_block_stop":
            self._stop(payload["index"], acc)
        elif kind == "message_start":
            message = payload.get("message") or {}
            acc.model = message.get("model") or acc.model
            acc.usage = usage_from_wire(message.get("usage"), acc.usage)
        elif kind == "message_delta":
            stop = (payload.get("delta") or {}).get("stop_reason")
            if stop:
                acc.finish_reason = STOP_REASONS.get(stop, "end_turn")
            acc.usage = usage_from_wire(payload.get("usage"), acc.usage)
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            error = payload.get("error") or {}
            error_type = error.get("type") or "error"
            text = (f"the server sent an error mid-stream: {error_type}: "
                    f"{error.get('message') or ''}".rstrip(": "))
            if says_overflow(text):
                raise ContextOverflowError(text, body=data)
            raise StreamError(text, retryable=error_type not in FATAL_ERRORS, body=data)
        # "ping" and unknown future events are ignored

    def _start(self, index: int, block: dict[str, Any], acc: StreamAccumulator) -> None:
        opened = self._open[index] = _OpenBlock(block)
        kind = block.get("type")
        if kind == "tool_use":
            acc.tool_call_delta(index, id=block.get("id"), name=block.get("name"))
        elif kind == "text" and block.get("text"):
            opened.parts.append(block["text"])
            acc.text(block["text"])
        elif kind == "thinking" and block.get("thinking"):
            opened.parts.append(block["thinking"])
            acc.reasoning(block["thinking"])

    def _delta(self, index: int, delta: dict[str, Any], acc: StreamAccumulator) -> None:
        kind = delta.get("type")
        opened = self._open.get(index)
        if kind == "text_delta":
            acc.text(delta["text"])
        elif kind == "input_json_delta":
            acc.tool_call_delta(index, arguments=delta.get("partial_json"))
            return  # arguments live in the accumulator only
        elif kind == "thinking_delta":
            acc.reasoning(delta["thinking"])
        elif kind == "signature_delta":
            if opened is not None:
                opened.block["signature"] = (opened.block.get("signature") or "") + delta[
                    "signature"]
            return
        else:
            return
        if opened is not None:
            opened.parts.append(delta.get("text") or delta.get("thinking") or "")

    def _stop(self, index: int, acc: StreamAccumulator) -> None:
        opened = self._open.pop(index, None)
        if opened is None:
            return
        block = opened.block
        kind = block.get("type")
        if kind == "text":
            block = {"type": "text", "text": "".join(opened.parts)}
        elif kind == "thinking":
            block = {**block, "thinking": "".join(opened.parts)}
        stored = stored_block(block)
        if stored is not None:
            self._content.append(stored)
            _store(acc, self._content)
