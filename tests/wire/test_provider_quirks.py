"""Quirks of real provider traffic (issue 12 item 5), each replayed from a recording of other
projects (tests/wire/recorded, sources in MANIFEST.tsv): straight through the adapter's parsers,
and end to end through `Agent` and the fake server serving the recorded bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import DoneEvent, Event, ReasoningDelta, StatusEvent, TextDelta
from loopwright.testing import FakeModelServer, Fault
from loopwright.wire import get_wire_format

Recorded = Callable[[str], Any]
Replay = Callable[..., Awaitable[Any]]
FAST = RetryPolicy(base_delay=0.01, jitter=0)


def served(body: Any) -> Fault:
    """The recorded body as the server's 200 reply: JSON as JSON, SSE as an event stream."""
    if isinstance(body, str):
        return Fault.status(200, body, headers={"content-type": "text/event-stream"})
    return Fault.status(200, body)


def agent_for(server: FakeModelServer, **kwargs: Any) -> Agent:
    return Agent("recorded", base_url=server.base_url, api_key="k", retry=FAST, **kwargs)


async def collect(agent: Agent, prompt: str) -> list[Event]:
    async def run() -> list[Event]:
        return [event async for event in agent.stream(prompt)]

    return await asyncio.wait_for(run(), timeout=20)  # "agent.stream() never ends" fails here


# --- Mistral / Magistral: content as a list of thinking / text chunks ---------------------------


def test_magistral_content_chunks_are_read_as_reasoning_and_text(recorded: Recorded) -> None:
    body = json.loads(recorded("pyai_mistral_magistral_thinking_chunks.json"))
    response = get_wire_format("chat_completions").parse_body(body)
    thinking, text = body["choices"][0]["message"]["content"]
    assert response.message.content == text["text"]
    assert response.message.reasoning == thinking["thinking"][0]["text"]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (664, 747)


async def test_magistral_stream_of_chunk_lists_is_read(recorded: Recorded, replay: Replay) -> None:
    out = await replay("chat_completions", recorded("pyai_mistral_magistral_thinking_stream.sse"))
    msg = out.response.message
    assert out.finished and out.response.finish_reason == "end_turn"
    assert msg.content.startswith("To cross the street safely, follow these steps:")
    assert msg.content.endswith("you can ensure a safe crossing.")
    assert msg.reasoning is not None and msg.reasoning.startswith("Okay, the user is asking")
    assert "".join(out.text_deltas) == msg.content
    assert "".join(out.reasoning_deltas) == msg.reasoning


@pytest.mark.parametrize("fixture", ["pyai_mistral_magistral_thinking_chunks.json",
                                     "pyai_mistral_magistral_thinking_stream.sse"])
async def test_a_magistral_reply_ends_the_run_through_the_agent(fixture: str,
                                                                recorded: Recorded) -> None:
    raw = recorded(fixture)
    body = json.loads(raw) if fixture.endswith(".json") else raw
    with FakeModelServer(replies=[served(body)]) as server:
        events = await collect(agent_for(server, stream=fixture.endswith(".sse")), "street?")
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.result.stop_reason == "completed"
    assert done.result.output.startswith(("Crossing a river", "To cross the street"))
    assert done.result.messages[-1].reasoning
    assert not any(isinstance(e, StatusEvent) and e.kind == "retrying" for e in events)


# --- Responses: reasoning as reasoning_text content; OpenRouter's [DONE] ------------------------


def test_responses_reasoning_text_content_is_kept(recorded: Recorded) -> None:
    body = json.loads(recorded("pyai_bedrock_gpt_oss_responses_reasoning_text.json"))
    response = get_wire_format("responses").parse_body(body)
    assert response.message.content == "OSS"
    assert response.message.reasoning == body["output"][0]["content"][0]["text"]


async def test_an_openrouter_responses_stream_ending_in_done_is_a_normal_end(
        recorded: Recorded, replay: Replay) -> None:
    out = await replay("responses", recorded("pyai_openrouter_responses_stream_done.sse"))
    assert out.finished and out.response.message.content == "4"
    assert out.response.message.reasoning == (
        'The user asks: "What is 2+2?" They expect a straightforward answer: 4. Just answer 4.')
    assert (out.response.usage.input_tokens, out.response.usage.output_tokens) == (78, 37)


async def test_the_openrouter_stream_is_not_retried_as_broken(recorded: Recorded) -> None:
    body = recorded("pyai_openrouter_responses_stream_done.sse")
    with FakeModelServer(replies=[served(body)]) as server:
        events = await collect(agent_for(server, api_mode="responses"), "2+2?")
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.result.output == "4"
    assert len(server.model_requests) == 1
    assert not any(isinstance(e, StatusEvent) and e.kind == "retrying" for e in events)


# --- inline <think> (DeepSeek-R1 distill on Groq) and Groq's x_groq.usage -----------------------


def test_inline_think_is_split_into_reasoning(recorded: Recorded) -> None:
    body = json.loads(recorded("pyai_groq_r1_distill_inline_think.json"))
    response = get_wire_format("chat_completions").parse_body(body)
    content = body["choices"][0]["message"]["content"]
    thought, answer = content.split("</think>")
    assert response.message.reasoning == thought.removeprefix("<think>").strip("\n")
    assert response.message.content == answer.lstrip()
    assert "<think>" not in response.message.content


async def test_streamed_inline_think_never_reaches_the_text_and_x_groq_usage_is_read(
        recorded: Recorded, replay: Replay) -> None:
    body = recorded("pyai_groq_r1_distill_stream_think_x_groq_usage.sse")
    for chunk_size in (3, 64):
        out = await replay("chat_completions", body, chunk_size)
        msg = out.response.message
        assert "think>" not in "".join(out.text_deltas)
        assert msg.content.startswith("To make Uruguayan alfajores, follow")
        assert msg.reasoning is not None
        assert msg.reasoning.startswith("Okay, so I want to make Uruguayan alfajores.")
        assert "".join(out.reasoning_deltas).strip() == msg.reasoning.strip()
        assert (out.response.usage.input_tokens, out.response.usage.output_tokens) == (21, 988)


async def test_inline_think_through_the_agent_streaming(recorded: Recorded) -> None:
    body = recorded("pyai_groq_r1_distill_stream_think_x_groq_usage.sse")
    with FakeModelServer(replies=[served(body)]) as server:
        events = await collect(agent_for(server), "alfajores?")
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert shown == done.result.output and shown.startswith("To make Uruguayan alfajores")
    assert "Uruguayan alfajores. I've heard" in thought
    assert done.result.usage.output_tokens == 988
