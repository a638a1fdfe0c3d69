"""Retries, backoff, stream fallback and wire quirks of a model call (DESIGN §3), over real HTTP."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Fault, Reply, ScriptedUsage, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def agent_for(server: FakeModelServer, events: list[Event] | None = None, **kw: Any) -> Agent:
    kw.setdefault("retry", FAST)
    return Agent("m", base_url=server.base_url, api_key="k",
                 callbacks=[events.append] if events is not None else [], **kw)


def statuses(events: list[Event], kind: str) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == kind]


def test_backoff_starts_at_half_a_second_and_doubles_to_32() -> None:
    policy = RetryPolicy(jitter=0)
    assert [policy.backoff(n) for n in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 32, 32]
    assert policy.attempts == 6 and policy.max_pause == 60


async def test_retry_after_ms_is_honoured_exactly() -> None:
    events: list[Event] = []
    with FakeModelServer(replies=[Fault.rate_limit(retry_after_ms=40), Reply(text="ok")]
                         ) as server:
        result = await agent_for(server, events).run("go")
    assert result.output == "ok"
    assert [s.data["delay"] for s in statuses(events, "retrying")] == [0.04]


async def test_retry_after_seconds_is_honoured() -> None:
    events: list[Event] = []
    with FakeModelServer(replies=[Fault.rate_limit(retry_after=1), Reply(text="ok")]) as server:
        result = await agent_for(server, events).run("go")
    assert result.output == "ok"
    assert [s.data["delay"] for s in statuses(events, "retrying")] == [1.0]


async def test_a_demanded_pause_over_60_seconds_is_an_error_not_a_hang() -> None:
    with FakeModelServer(replies=[Fault.rate_limit(retry_after=120)]
                         ) as server:
        result = await agent_for(server).run("go", raise_on_error=False)
    assert result.stop_reason == "error"
    assert result.error is not None and "asked to wait 120s" in result.error
    assert len(server.model_requests) == 1


@pytest.mark.parametrize("fault", [Fault.status(500), Fault.status(502), Fault.status(503),
                                   Fault.overloaded(), Fault.rate_limit(), Fault.disconnect()])
async def test_transient_failures_are_retried(fault: Fault) -> None:
    with FakeModelServer(replies=[fault, fault, Reply(text="ok")]) as server:
        result = await agent_for(server).run("go")
    assert result.output == "ok"
    assert len(server.model_requests) == 3


async def test_attempts_are_capped_with_one_retry_layer_only() -> None:
    # more faults than the policy allows attempts: a second retry layer would ask for them
    with FakeModelServer(replies=[Fault.status(503)] * 10, strict=False) as server:
        result = await agent_for(server).run("go", raise_on_error=False)
    assert result.stop_reason == "error"
    assert result.error is not None and "gave up after 6 attempts" in result.error
    assert len(server.model_requests) == 6  # nothing below us retried on its own


@pytest.mark.parametrize("code", [400, 404, 422])
async def test_client_errors_are_not_retried(code: int) -> None:
    with FakeModelServer(replies=[Fault.status(code)]) as server:
        result = await agent_for(server).run("go", raise_on_error=False)
    assert result.stop_reason == "error" and f"HTTP {code}" in (result.error or "")
    assert len(server.model_requests) == 1


async def test_auth_errors_say_to_check_the_key() -> None:
    with FakeModelServer(replies=[Fault.status(401)]) as server:
        result = await agent_for(server).run("go", raise_on_error=False)
    assert "check the API key" in (result.error or "")
    assert len(server.model_requests) == 1


async def test_a_dying_stream_falls_back_once_to_a_plain_call() -> None:
    events: list[Event] = []
    cut = Fault.cut_stream(Reply(text="partial answer that dies"), after_chunks=2)
    with FakeModelServer(replies=[cut, Reply(text="full answer")]) as server:
        result = await agent_for(server, events).run("go")
    assert result.output == "full answer"
    assert server.model_requests[0].body["stream"] is True
    assert "stream" not in server.model_requests[1].body
    assert statuses(events, "retrying")[0].data["fallback"] == "non_streaming"


async def test_a_stream_idle_past_its_timeout_counts_as_dead() -> None:
    stall = Fault.stall(Reply(text="slow stream"), after_chunks=1, seconds=5)
    with FakeModelServer(replies=[stall, Reply(text="recovered")]) as server:
        result = await agent_for(server, stream_idle_timeout=0.3).run("go")
    assert result.output == "recovered"
    assert "stream" not in server.model_requests[1].body


async def test_an_empty_reply_is_retried_once() -> None:
    with FakeModelServer(replies=[Fault.empty(), Reply(text="now with content")]) as server:
        result = await agent_for(server).run("go")
    assert result.output == "now with content"
    assert len(server.model_requests) == 2


async def test_two_empty_replies_end_the_run_with_a_clear_error() -> None:
    with FakeModelServer(replies=[Fault.empty(), Fault.empty()]) as server:
        result = await agent_for(server).run("go", raise_on_error=False)
    assert result.stop_reason == "error" and "empty reply twice" in (result.error or "")
    assert len(server.model_requests) == 2


@tool(read_only=True)
def now() -> str:
    """The time."""
    return "12:00"


@pytest.mark.parametrize("stream", [True, False])
async def test_parallel_calls_with_empty_ids_get_distinct_ids(stream: bool) -> None:
    script = [Reply(tool_calls=[call("now"), call("now", {})], empty_id=True), Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        result = await agent_for(server, tools=[now], stream=stream).run("time twice")
    calls = result.messages[2].tool_calls
    assert len(calls) == 2 and len({c.id for c in calls}) == 2 and all(c.id for c in calls)
    sent = server.model_requests[1].body["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [c.id for c in calls]


async def test_usage_from_the_final_usage_only_chunk_is_captured() -> None:
    usage = ScriptedUsage(input_tokens=120, output_tokens=7, cache_read_tokens=100,
                          reasoning_tokens=3)
    with FakeModelServer(replies=[Reply(text="ok", usage=usage)]) as server:
        result = await agent_for(server).run("go")
    assert server.model_requests[0].body["stream_options"] == {"include_usage": True}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (120, 7)
    assert (result.usage.cache_read_tokens, result.usage.reasoning_tokens) == (100, 3)


@pytest.mark.parametrize("stream", [True, False])
async def test_reasoning_is_streamed_and_kept_on_the_message(stream: bool) -> None:
    events: list[Event] = []
    with FakeModelServer(replies=[Reply(text="42", reasoning="think think")]) as server:
        result = await agent_for(server, events, stream=stream).run("go")
    assert "".join(e.text for e in events if e.type == "reasoning_delta") == "think think"
    assert result.messages[-1].reasoning == "think think"


async def test_the_base_url_may_omit_v1() -> None:
    with FakeModelServer(replies=[Reply(text="ok")]) as server:
        agent = Agent("m", base_url=server.url, api_key="k")
        result = await agent.run("go")
    assert result.output == "ok"
    assert server.model_requests[0].path.endswith("/v1/chat/completions")
    assert server.model_requests[0].headers["authorization"] == "Bearer k"


async def test_after_a_dead_stream_only_the_unseen_rest_of_the_reply_is_shown() -> None:
    events: list[Event] = []
    full = "The capital of the United Kingdom is London."
    cut = Fault.cut_stream(Reply(text=full, chunk_size=6), after_chunks=3)
    with FakeModelServer(replies=[cut, Reply(text=full)]) as server:
        result = await agent_for(server, events).run("capital?")
    shown = "".join(e.text for e in events if e.type == "text_delta")
    assert shown == full and result.output == full
    assert not statuses(events, "discard_partial")


async def test_a_retried_reply_that_differs_is_shown_whole_after_a_discard_notice() -> None:
    events: list[Event] = []
    cut = Fault.cut_stream(Reply(text="First draft of an answer", chunk_size=5), after_chunks=3)
    with FakeModelServer(replies=[cut, Reply(text="Another answer")]) as server:
        result = await agent_for(server, events).run("go")
    kinds = [e.type if e.type != "status" else e.kind for e in events]
    notice = kinds.index("discard_partial")
    after = "".join(e.text for e in events[notice:] if e.type == "text_delta")
    assert after == "Another answer" == result.output



async def test_a_plain_reply_retried_as_empty_shows_its_reasoning_once() -> None:
    """Unstreamed: an empty reply's reasoning is shown, and the retry's reply shows only what
    extends it (a plain call keeps no record of what it showed until it needs one)."""
    events: list[Event] = []
    script = [Reply(text="", reasoning="Thinking it over."),
              Reply(text="ok", reasoning="Thinking it over. Done.")]
    with FakeModelServer(replies=script) as server:
        result = await agent_for(server, events, stream=False).run("go")
    assert result.output == "ok" and len(server.model_requests) == 2
    shown = "".join(e.text for e in events if e.type == "reasoning_delta")
    assert shown == "Thinking it over. Done."
    assert not statuses(events, "discard_partial")

TLS_COUNT = """
import asyncio, ssl
made = []
original = ssl.create_default_context
def counting(*args, **kwargs):
    made.append(1)
    return original(*args, **kwargs)
ssl.create_default_context = counting
from loopwright import Agent
from loopwright.endpoints.base import request_slot
from loopwright.testing import FakeModelServer, Reply

async def main():
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", skills=False) as agent:
            await agent.run("a")
            await agent.run("b")
        async with request_slot(url="http://127.0.0.1:9/v1/chat/completions"):
            pass  # an http:// URL given as text: no TLS either
        plain = len(made)
        async with request_slot(url="https://api.example.com/v1/chat/completions"):
            pass  # the pool an https:// request would get, without sending one
        async with request_slot(url="https://api.example.com/v1/responses"):
            pass
    print(plain, len(made))

asyncio.run(main())
"""


def test_http_urls_need_no_tls_set_up_and_https_ones_share_one() -> None:
    """Issue 31: each connection pool loaded the CA bundle (a TLS context, ~15-30 ms of CPU)
    even when every URL was http://; now only an https:// request makes it, once a process."""
    out = subprocess.run([sys.executable, "-c", TLS_COUNT], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == ["0", "1"]
