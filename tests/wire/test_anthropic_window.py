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
    """Answers like Anthropic in front of a 4096-token window, or `window` (input estimated at 4
    characters a token, as the fake server estimates usage)."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self.max_tokens: list[int] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        body: dict[str, Any] = request.body or {}
        self.max_tokens.append(body["max_tokens"])
        used = len(json.dumps(body)) // 4
        if used + body["max_tokens"] > self.window:
            message = (f"input length and `max_tokens` exceed context limit: {used} + "
                       f"{body['max_tokens']} > {self.window}, decrease input length or "
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


class ThinkingWindowServer(SmallWindowServer):
    """Also rejects what Anthropic rejects of a thinking budget: under 1024 tokens, or not
    below `max_tokens`."""

    def __init__(self, window: int = WINDOW) -> None:
        super().__init__(window)
        self.budgets: list[int | None] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        body: dict[str, Any] = request.body or {}
        budget = (body.get("thinking") or {}).get("budget_tokens")
        self.budgets.append(budget)
        if budget is not None and not 1024 <= budget < body["max_tokens"]:
            return Fault.status(400, json.dumps({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "thinking.budget_tokens: must be >= 1024 and less than max_tokens"}}))
        return super().__call__(request)


async def test_a_thinking_budget_is_cut_to_what_a_small_window_leaves() -> None:
    window = ThinkingWindowServer()
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=WINDOW,
                                 reasoning_effort="high").run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    (budget,) = window.budgets  # one request, with thinking still on
    assert budget is not None and 1024 <= budget < window.max_tokens[0] < WINDOW


async def test_a_thinking_budget_the_window_leaves_room_for_is_sent_whole() -> None:
    window = ThinkingWindowServer(200_000)
    with FakeModelServer(handler=window) as server:
        await agent_for(server, context_window=200_000, reasoning_effort="high").run("Hi.")
    assert window.budgets == [16_384] and window.max_tokens == [16_384 + 4_096]


async def test_no_thinking_when_the_window_leaves_less_than_its_minimum() -> None:
    window = ThinkingWindowServer(2048)
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=2048,
                                 reasoning_effort="high").run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert window.budgets == [None] and window.max_tokens[0] < 2048


async def test_a_thinking_budget_beside_a_max_tokens_set_is_cut_to_the_window() -> None:
    # the max_tokens set is the answer's allowance, the thinking budget comes on top of it: the
    # two were sent whole (16,384 + 1,000 on a 4,096 window), rejected, and the run stopped
    window = ThinkingWindowServer()
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=WINDOW, max_tokens=1_000,
                                 reasoning_effort="high").run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    (budget,) = window.budgets  # one request, with thinking still on
    assert budget is not None and budget >= 1024
    assert window.max_tokens == [budget + 1_000] and budget + 1_000 < WINDOW


async def test_no_thinking_beside_a_max_tokens_set_when_the_window_leaves_too_little() -> None:
    window = ThinkingWindowServer(2048)
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=2048, max_tokens=1_000,
                                 reasoning_effort="high").run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert window.budgets == [None] and window.max_tokens == [1_000]


async def test_thinking_beside_a_max_tokens_set_is_cut_to_the_providers_count() -> None:
    # compaction off: no estimate of what the window leaves; the provider's reply names it
    window = ThinkingWindowServer()
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, context_window=WINDOW, max_tokens=1_000,
                                 reasoning_effort="high", compaction=False).run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert window.budgets[0] == 16_384 and len(window.budgets) == 2
    budget = window.budgets[1]
    assert budget is not None and window.max_tokens[1] == budget + 1_000 <= WINDOW
