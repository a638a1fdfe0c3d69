"""A request over the window reported inside a 200 reply is an overflow as much as a 400 is: not
retried, not re-sent without streaming, but shrunk, and the run goes on. The Responses API
reports it as a failed response with the code `context_length_exceeded` (mid-stream, a
`response.failed` event, which the OpenAI SDKs and Codex read as "context window exceeded");
OpenAI- and Anthropic-compatible servers may send an error event mid-stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ContextOverflowError, ProviderError
from loopwright.events import Event

OVER = {"code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your "
                   "input and try again."}
Sent = tuple[bytes, bytes]  # (content type, body)


def completed(*output: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "model": "m",
            "output": list(output), "usage": {"input_tokens": 10, "output_tokens": 2}}


def failed(error: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "failed", "model": "m",
            "output": [], "error": error}


def text(words: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": words}]}


def sse(*events: tuple[str | None, dict[str, Any]]) -> bytes:
    return b"".join((f"event: {kind}\n" if kind else "").encode()
                    + f"data: {json.dumps(data)}\n\n".encode() for kind, data in events)


@asynccontextmanager
async def raw_server(reply: Callable[[int, dict[str, Any]], Sent],
                     requests: list[dict[str, Any]]) -> AsyncIterator[str]:
    """Answers each POST, HTTP 200, with `reply(request number, request body)`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        body = json.loads(await reader.readexactly(length))
        requests.append(body)
        kind, payload = reply(len(requests), body)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: " + kind + b"\r\ncontent-length: "
                     + str(len(payload)).encode() + b"\r\nconnection: close\r\n\r\n" + payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    finally:
        server.close()


def responses(answer: Callable[[int], dict[str, Any]]) -> Callable[[int, dict[str, Any]], Sent]:
    """The Responses API answering `answer(request number)`: a failed response streamed as
    `response.created` then `response.failed` (plain: the failed object); a completed one as
    JSON."""

    def reply(number: int, body: dict[str, Any]) -> Sent:
        response = answer(number)
        if body.get("stream") and response["status"] == "failed":
            return b"text/event-stream", sse(
                ("response.created", {"type": "response.created",
                                      "response": {**response, "status": "in_progress"}}),
                ("response.failed", {"type": "response.failed", "response": response}))
        return b"application/json", json.dumps(response).encode()

    return reply


@tool(read_only=True)
def pages() -> str:
    """Some long pages."""
    return "A line of a long page.\n" * 2_000


def agent_for(base_url: str, *, stream: bool, events: list[Event],
              mode: str = "responses") -> Agent:
    return Agent("m", base_url=base_url, api_key="k", api_mode=mode, stream=stream,
                 context_window=200_000, tools=[pages], callbacks=[events.append],
                 retry=RetryPolicy(base_delay=0.01, jitter=0))


@pytest.mark.parametrize("stream", [True, False])
async def test_context_length_exceeded_is_learned_and_the_run_goes_on(stream: bool) -> None:
    def answer(number: int) -> dict[str, Any]:
        if number == 1:
            return completed({"type": "function_call", "call_id": "c1", "name": "pages",
                              "arguments": "{}"})
        return failed(OVER) if number == 2 else completed(text("fits now"))

    requests: list[dict[str, Any]] = []
    events: list[Event] = []
    async with raw_server(responses(answer), requests) as base_url:
        result = await agent_for(base_url, stream=stream, events=events).run("Read the pages.")
    assert (result.stop_reason, result.output) == ("completed", "fits now")
    assert len(requests) == 3  # the rejected one neither retried nor re-sent without streaming
    assert [e.kind for e in events if e.type == "status"
            and e.kind in ("context_window", "retrying")] == ["context_window"]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_overflow_that_nothing_shrinks_stops_the_run_at_once(stream: bool) -> None:
    requests: list[dict[str, Any]] = []
    async with raw_server(responses(lambda number: failed(OVER)), requests) as base_url:
        with pytest.raises(ContextOverflowError, match="context_length_exceeded"):
            await agent_for(base_url, stream=stream, events=[]).run("hello")
    assert len(requests) == 1


async def test_a_failed_response_for_another_reason_is_still_retried() -> None:
    requests: list[dict[str, Any]] = []
    server_error = failed({"code": "server_error", "message": "try again"})
    async with raw_server(responses(lambda number: server_error), requests) as base_url:
        with pytest.raises(ProviderError) as caught:
            await agent_for(base_url, stream=False, events=[]).run("hello")
    assert not isinstance(caught.value, ContextOverflowError)
    assert len(requests) == RetryPolicy().attempts


MID_STREAM: dict[str, bytes] = {
    # an OpenAI-compatible server's bare error chunk after the reply began
    "chat_completions": sse(
        (None, {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        (None, {"error": {"message": "This model's maximum context length is 4096 tokens. "
                                     "However, your messages resulted in 5000 tokens.",
                          "code": "context_length_exceeded"}})),
    "anthropic_messages": sse(
        ("message_start", {"type": "message_start", "message": {
            "id": "msg", "type": "message", "role": "assistant", "model": "m", "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        ("error", {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 5000 tokens > 4096 maximum"}})),
}


FITS_NOW: dict[str, dict[str, Any]] = {
    "chat_completions": {"id": "c", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "fits now"},
         "finish_reason": "stop"}]},
    "anthropic_messages": {"id": "msg", "type": "message", "role": "assistant", "model": "m",
                           "content": [{"type": "text", "text": "fits now"}],
                           "stop_reason": "end_turn",
                           "usage": {"input_tokens": 1, "output_tokens": 2}},
}


@pytest.mark.parametrize("mode", sorted(MID_STREAM))
async def test_an_overflow_error_event_mid_stream_is_learned_and_the_run_goes_on(
        mode: str) -> None:
    def reply(number: int, body: dict[str, Any]) -> Sent:
        if number == 1:
            return b"text/event-stream", MID_STREAM[mode]
        return b"application/json", json.dumps(FITS_NOW[mode]).encode()

    requests: list[dict[str, Any]] = []
    events: list[Event] = []
    async with raw_server(reply, requests) as base_url:
        result = await agent_for(base_url, stream=True, events=events, mode=mode).run("hello")
    assert (result.stop_reason, result.output) == ("completed", "fits now")
    assert len(requests) == 2 and requests[1]["stream"]  # not re-sent without streaming
    assert [(e.kind, e.data.get("window")) for e in events  # type: ignore[attr-defined]
            if e.type == "status" and e.kind in ("context_window", "retrying")] == [
        ("context_window", 4096)]
