"""A server that claims every request is over its window ends the run with an error after a
bounded number of requests — it is never shrunk and sent again for ever — whatever the claim
names: a fixed window, a smaller one each time, none, or the reply's allowance."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Fault
from loopwright.testing.scripted import RecordedRequest, ScriptItem

# a stall, not a slow machine: how fast a megabytes-long error is read is bench's to say, not a
# timed assert's (the search is bounded to wire.base.ERROR_HEAD_CHARS)
HANG_GUARD = 120
MOST_REQUESTS = 4  # the first, once with the allowance fitted, once shrunk, once both


def claim(message: str) -> ScriptItem:
    return Fault.status(400, json.dumps({"error": {
        "message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}}))


class AlwaysOver:
    """Answers every model request with an overflow; `wording(n)` is the n-th one's text."""

    def __init__(self, wording: Any) -> None:
        self.wording = wording
        self.seen = 0

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        self.seen += 1
        return claim(self.wording(self.seen))


CLAIMS: dict[str, Any] = {
    "a fixed window": lambda n: "This model's maximum context length is 4096 tokens.",
    "a smaller window each time": lambda n: (
        f"This model's maximum context length is {8192 - 600 * n} tokens."),
    "the least window": lambda n: "This model's maximum context length is 512 tokens.",
    "no number": lambda n: "context length exceeded",
    "an absurd number": lambda n: "This model's maximum context length is 1e309 tokens.",
    "the allowance": lambda n: (
        "This model's maximum context length is 4096 tokens. However, you requested 5000 "
        "tokens (1000 in the messages, 4000 in the completion)."),
    "the allowance, no input": lambda n: (
        "This model's maximum context length is 4096 tokens. However, you requested 9000 "
        "tokens (0 in the messages, 9000 in the completion)."),
}


@pytest.mark.parametrize("case", sorted(CLAIMS))
@pytest.mark.parametrize("max_tokens", [None, 4_000])
async def test_a_server_that_is_always_over_ends_the_run(case: str,
                                                         max_tokens: int | None) -> None:
    server_side = AlwaysOver(CLAIMS[case])
    with FakeModelServer(handler=server_side) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", context_window=32_000,
                      max_tokens=max_tokens, retry=RetryPolicy(base_delay=0.01, jitter=0),
                      cache_dir=None)
        result = await agent.run("word " * 3_000, raise_on_error=False)
    assert result.stop_reason == "error"
    assert 1 <= server_side.seen <= MOST_REQUESTS


async def test_an_overflow_reply_of_megabytes_is_read_without_holding_the_loop() -> None:
    # a server that echoes the request (or anything) after its message: every wording's search
    # ran over the whole body on the event loop, ~10 s for 20 MB; this one is 45 MB
    from loopwright.events import Event

    body = json.dumps({"error": {"message": "the context length is exceeded",
                                 "echo": "1 (" * 15_000_000}})
    events: list[Event] = []
    with FakeModelServer([Fault.status(400, body)]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", context_window=32_000,
                      retry=RetryPolicy(base_delay=0.01, jitter=0), cache_dir=None,
                      callbacks=[events.append])
        # long: a window guessed below it is plausible (and too small for it: the run ends)
        result = await asyncio.wait_for(agent.run("word " * 3_000, raise_on_error=False),
                                        HANG_GUARD)
    assert result.stop_reason == "error"
    assert any(e.type == "status" and e.kind == "context_window" for e in events)


async def test_another_error_of_megabytes_is_read_without_holding_the_loop() -> None:
    body = json.dumps({"error": {"message": "Invalid value for 'tool_choice'.",
                                 "echo": "1 (" * 15_000_000}})
    with FakeModelServer([Fault.status(400, body)]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", context_window=32_000,
                      retry=RetryPolicy(base_delay=0.01, jitter=0), cache_dir=None)
        result = await asyncio.wait_for(agent.run("hello", raise_on_error=False), HANG_GUARD)
    assert result.stop_reason == "error" and "tool_choice" in (result.error or "")


@pytest.mark.parametrize("wording", [
    "the context length is -4096 tokens", "maximum context length is -4096", "n_ctx: -4096",
    "context size: -8192 tokens", "maximum context length is 0 tokens",
    "maximum context length is 1e309 tokens",
])
async def test_a_window_named_negative_zero_or_absurd_is_no_window(wording: str) -> None:
    from loopwright.events import Event

    events: list[Event] = []
    with FakeModelServer([claim(wording)]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", context_window=32_000,
                      retry=RetryPolicy(base_delay=0.01, jitter=0), cache_dir=None,
                      callbacks=[events.append])
        # short: no window can be guessed below it either
        result = await agent.run("hello", raise_on_error=False)
    assert result.stop_reason == "error"
    assert [e for e in events if e.type == "status" and e.kind == "context_window"] == []
