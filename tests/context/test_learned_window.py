"""A window the provider names in an overflow reply is kept for the agent's later runs (each turn
of `loopwright chat`, each `serve` or batch run is one), so only the first run pays a rejected
request; a window merely guessed from a rejection (no number in the reply) is the run's own, and
is never below a plausible window."""

from __future__ import annotations

import json
from typing import Any

from loopwright import Agent, tool
from loopwright.endpoints.probe import MIN_WINDOW
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.routing.choose import ChoiceContext
from loopwright.testing import FakeModelServer, Fault, Reply, call
from loopwright.testing.scripted import RecordedRequest, ScriptItem

WINDOW = 4096


class AnthropicWindow:
    """Answers like Anthropic in front of a 4096-token window (the input estimated at 4
    characters a token)."""

    def __init__(self) -> None:
        self.rejected = 0

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        body: dict[str, Any] = request.body or {}
        used = len(json.dumps(body)) // 4
        if used + body["max_tokens"] > WINDOW:
            self.rejected += 1
            message = (f"input length and `max_tokens` exceed context limit: {used} + "
                       f"{body['max_tokens']} > {WINDOW}, decrease input length or "
                       "`max_tokens` and try again")
            return Fault.status(400, json.dumps({"type": "error", "error": {
                "type": "invalid_request_error", "message": message}}))
        return Reply("answered")


def agent_for(server: FakeModelServer, mode: str = "anthropic_messages",
              events: list[Event] | None = None, **options: Any) -> Agent:
    return Agent("claude-test", base_url=server.base_url, api_key="k", api_mode=mode,
                 context_window=200_000, retry=RetryPolicy(base_delay=0.01, jitter=0),
                 callbacks=[events.append] if events is not None else [], **options)


@tool(read_only=True)
def pages() -> str:
    """Some long pages."""
    return "A line of a long page.\n" * 2_000  # ~11,500 tokens: the guess is a plausible window


async def test_a_window_the_provider_named_is_kept_for_the_agents_next_runs() -> None:
    window = AnthropicWindow()
    with FakeModelServer(handler=window) as server:
        agent = agent_for(server)
        outputs = [(await agent.run("Say hello.")).output for _ in range(3)]
        requests = len(server.model_requests)
    assert outputs == ["answered"] * 3
    assert window.rejected == 1 and requests == 4  # the first run's first request only
    assert (agent.windows[0].tokens, agent.windows[0].source) == (WINDOW, "provider_error")


async def test_a_guessed_window_stays_with_its_run() -> None:
    # no number in the reply: the window is guessed below the rejected request, for this run
    unnamed = Fault.status(400, json.dumps({"error": {"message": "context length exceeded"}}))
    script = [Reply(tool_calls=[call("pages", {})]), unnamed, Reply("first"), Reply("second")]
    events: list[Event] = []
    with FakeModelServer(script) as server:
        agent = agent_for(server, "chat_completions", events, tools=[pages])
        first = await agent.run("Read the pages.")
        second = await agent.run("Say hello.")
    assert (first.output, second.output) == ("first", "second")
    assert [e.kind for e in events if e.type == "status" and e.kind == "context_window"] == [
        "context_window"]  # the first run learned one
    assert (agent.windows[0].tokens, agent.windows[0].source) == (200_000, "explicit")


async def test_a_tiny_request_rejected_as_too_long_teaches_no_window() -> None:
    # a few hundred tokens "over the window": no plausible window is below it, so nothing is
    # learned (no `context_window` status claiming one of ~100 tokens) and the run stops
    events: list[Event] = []
    unnamed = Fault.status(400, json.dumps({"error": {"message": "context length exceeded"}}))
    with FakeModelServer([unnamed]) as server:
        result = await agent_for(server, "chat_completions", events).run(
            "hello", raise_on_error=False)
        requests = len(server.model_requests)
    assert result.stop_reason == "error" and "context length exceeded" in (result.error or "")
    assert requests == 1
    learned = [e.data["window"] for e in events  # type: ignore[attr-defined]
               if e.type == "status" and e.kind == "context_window"]
    assert all(window >= MIN_WINDOW for window in learned), learned


async def test_a_window_named_by_a_model_routed_to_is_not_kept_for_the_primary() -> None:
    # `choose_model` sends the first run's call to a smaller model, which rejects it: its
    # window is not the primary's, which the agent's later runs still use whole
    def answer(request: RecordedRequest) -> ScriptItem:
        if request.model == "small-m":
            return Fault.status(400, json.dumps({"error": {"message": (
                "This model's maximum context length is 4096 tokens. However, your messages "
                "resulted in 5000 tokens.")}}))
        return Reply("answered")

    def choose(context: ChoiceContext) -> Any:
        small = {"model": "small-m", "base_url": server.base_url, "api_key": "k"}
        return small if "route me" in context.prompt else None

    with FakeModelServer(handler=answer, strict=False) as server:
        agent = agent_for(server, "chat_completions", choose_model=choose)
        await agent.run("route me", raise_on_error=False)
        second = await agent.run("Say hello.")
    assert second.output == "answered"
    assert (agent.windows[0].tokens, agent.windows[0].source) == (200_000, "explicit")
