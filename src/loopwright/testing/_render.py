"""Turns one script item into the bytes (and timing) of an HTTP response in a given wire format."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from loopwright.testing import _wire_anthropic, _wire_chat, _wire_responses
from loopwright.testing._http import CHUNKED_END, Send, chunked, response_bytes, stream_head
from loopwright.testing._wire_common import RenderContext, dumps
from loopwright.testing.scripted import Fault, Reply, ScriptItem, WireFormat

_SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"


@dataclass(frozen=True, slots=True)
class _Renderer:
    render_json: Callable[[Reply, RenderContext], dict[str, Any]]
    render_events: Callable[[Reply, RenderContext], list[bytes]]


_RENDERERS: dict[WireFormat, _Renderer] = {
    "chat_completions": _Renderer(_wire_chat.render_json, _wire_chat.render_events),
    "anthropic_messages": _Renderer(_wire_anthropic.render_json, _wire_anthropic.render_events),
    "responses": _Renderer(_wire_responses.render_json, _wire_responses.render_events),
}

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 429: "requests"}
_DEFAULT_MESSAGES = {429: "Rate limit reached", 529: "Overloaded"}


@dataclass(frozen=True, slots=True)
class Target:
    """Where an item is rendered: wire format, streaming or not, connection reuse."""

    format: WireFormat
    stream: bool
    keep_alive: bool
    ctx: RenderContext


def render_item(item: ScriptItem, target: Target) -> Send:
    """The response for one script item."""
    if isinstance(item, Reply):
        return _reply(item, _for_reply(target, item))
    if item.kind in ("cut_stream", "stall"):
        return _interrupted(item, target)
    if item.kind == "stream_error":
        return _stream_error(item, target)
    if item.kind == "disconnect":
        return Send(b"", drop=True)
    return _fault_response(item, target)


def error_response(
    fmt: WireFormat | None,
    status: int,
    message: str,
    *,
    keep_alive: bool = True,
    headers: Mapping[str, str] | None = None,
) -> Send:
    """An error in the format's own envelope, so client error parsing is exercised too."""
    body = dumps(error_json(fmt, status, message)).encode()
    return Send(response_bytes(status, body, headers=headers, keep_alive=keep_alive))


def error_json(fmt: WireFormat | None, status: int, message: str) -> dict[str, Any]:
    """The error body a real server of this format sends."""
    if fmt == "anthropic_messages":
        default = "api_error" if status >= 500 else "invalid_request_error"
        return _wire_anthropic.error_json(_ANTHROPIC_ERROR_TYPES.get(status, default), message)
    error_type = _OPENAI_ERROR_TYPES.get(status)
    if error_type is None:
        error_type = "server_error" if status >= 500 else "invalid_request_error"
    if status == 529:
        error_type = "overloaded_error"
    code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _for_reply(target: Target, reply: Reply) -> Target:
    """The target with the reply's own model name, when it names one."""
    if reply.model is None:
        return target
    return replace(target, ctx=replace(target.ctx, model=reply.model))


def _reply(reply: Reply, target: Target) -> Send:
    renderer = _RENDERERS[target.format]
    if not target.stream:
        body = dumps(renderer.render_json(reply, target.ctx)).encode()
        return Send(response_bytes(200, body, keep_alive=target.keep_alive), delay=reply.delay)
    events = renderer.render_events(reply, target.ctx)
    head = stream_head(200, _SSE_CONTENT_TYPE, None, target.keep_alive)
    return Send(head + chunked(events) + CHUNKED_END, delay=reply.delay)


def _interrupted(fault: Fault, target: Target) -> Send:
    reply = fault.reply or Reply()
    target = _for_reply(target, reply)
    if not target.stream:
        if fault.kind == "cut_stream":
            return Send(b"", delay=reply.delay, drop=True)
        whole = _reply(reply, target)
        return Send(whole.first, delay=reply.delay + fault.seconds)
    events = _RENDERERS[target.format].render_events(reply, target.ctx)
    head = stream_head(200, _SSE_CONTENT_TYPE, None, target.keep_alive)
    sent, held = events[: fault.after_chunks], events[fault.after_chunks :]
    if fault.kind == "cut_stream":
        return Send(head + chunked(sent), delay=reply.delay, drop=True)
    return Send(
        head + chunked(sent),
        chunked(held) + CHUNKED_END,
        delay=reply.delay,
        pause=fault.seconds,
    )


def _stream_error(fault: Fault, target: Target) -> Send:
    message = _DEFAULT_MESSAGES.get(fault.code, f"Simulated error {fault.code}")
    if not target.stream:
        return error_response(target.format, fault.code, message, keep_alive=target.keep_alive)
    reply = fault.reply or Reply()
    events = _RENDERERS[target.format].render_events(reply, _for_reply(target, reply).ctx)
    payload = error_json(target.format, fault.code, message)
    if target.format == "chat_completions":  # OpenAI-compatible servers send a bare error chunk
        error_event = f"data: {dumps(payload)}\n\n"
    elif target.format == "responses":
        error = payload["error"]
        flat = {"type": "error", "code": error["type"], "message": message, "param": None}
        error_event = f"event: error\ndata: {dumps(flat)}\n\n"
    else:
        error_event = f"event: error\ndata: {dumps(payload)}\n\n"
    head = stream_head(200, _SSE_CONTENT_TYPE, None, target.keep_alive)
    body = chunked([*events[: fault.after_chunks], error_event.encode()]) + CHUNKED_END
    return Send(head + body, delay=reply.delay)


def _fault_response(fault: Fault, target: Target) -> Send:
    headers = dict(fault.headers)
    if fault.retry_after is not None:
        headers["retry-after"] = _number(fault.retry_after)
    if fault.retry_after_ms is not None:
        headers["retry-after-ms"] = str(fault.retry_after_ms)
    if fault.body is None:
        message = _DEFAULT_MESSAGES.get(fault.code, f"Simulated HTTP {fault.code}")
        return error_response(
            target.format, fault.code, message, keep_alive=target.keep_alive, headers=headers
        )
    body, content_type = _custom_body(fault.body)
    raw = response_bytes(
        fault.code, body, content_type=content_type, headers=headers, keep_alive=target.keep_alive
    )
    return Send(raw)


def _custom_body(body: Any) -> tuple[bytes, str]:
    """JSON values are serialised; strings go verbatim, typed JSON only if they parse as JSON."""
    if not isinstance(body, str):
        return dumps(body).encode(), "application/json"
    try:
        json.loads(body)
    except json.JSONDecodeError:
        return body.encode(), "text/plain; charset=utf-8"
    return body.encode(), "application/json"


def _number(seconds: float) -> str:
    # Retry-After is integral in HTTP; keep "1" rather than "1.0", but let fractions through.
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)
