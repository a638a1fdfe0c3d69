"""Anthropic mode fits `max_tokens` to what the window leaves: a server with a 4096-token window,
which rejects input + `max_tokens` over it the way Anthropic does, takes the first request."""

from __future__ import annotations

import json
from typing import Any

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Fault, Reply
from loopwright.testing.scripted import RecordedRequest, ScriptItem

WINDOW = 4096


class SmallWindowServer:
    """Answers like Anthropic in front of a 4096-token window (input estimated at 4 characters a
    token, as the fake server estimates usage)."""

    def __init__(self) -> None:
        self.max_tokens: list[int] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        body: dict[str, Any] = request.body or {}
        self.max_tokens.append(body["max_tokens"])
        used = len(json.dumps(body)) // 4
        if used + body["max_tokens"] > WINDOW:
            message = (f"input length and `max_tokens` exceed context limit: {used} + "
                       f"{body['max_tokens']} > {WINDOW}, decrease input length or "
                       "`max_tokens` and try again")
            return Fault.status(400, json.dumps({"type": "error", "error": {
                "type": "invalid_request_error", "message": message}}))
        return Reply("answered")


def agent_for(server: FakeModelServer, **options: Any) -> Agent:
    return Agent("claude-test", base_url=server.base_url, api_key="k",
                 api_mode="anthropic_messages", retry=RetryPolicy(base_delay=0.01, jitter=0),
                 **options)


async def test_the_first_request_fits_a_known_4096_token_window() -> None:
    window = SmallWindowServer()
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=WINDOW).run("Say hello.")
    assert result.output == "answered"
    assert len(window.max_tokens) == 1 and window.max_tokens[0] < WINDOW


async def test_an_unknown_window_is_learned_from_the_rejection_and_the_run_goes_on() -> None:
    window = SmallWindowServer()
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=200_000).run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert window.max_tokens[0] == 8192 and window.max_tokens[1] < WINDOW


async def test_an_explicit_max_tokens_is_sent_as_given() -> None:
    window = SmallWindowServer()
    with FakeModelServer(handler=window) as server:
        await agent_for(server, context_window=WINDOW, max_tokens=100).run("Say hello.")
    assert window.max_tokens == [100]
