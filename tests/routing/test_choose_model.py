"""Per-call model routing (`choose_model`: a function or config rules, enforce or suggest) and
the built-in intent router, through `Agent` and the fake server in every API mode."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError
from loopwright.events import Event, StatusEvent
from loopwright.routing.choose import ChoiceContext, ModelChoice
from loopwright.routing.router import ROUTER_PROMPT
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(attempts=2, base_delay=0.01, jitter=0)
MODES = ["chat_completions", "anthropic_messages", "responses"]


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Models:
    """Turn 1 calls `add`, then an answer; records the model of every request; `dead` models
    fail for good; router calls get `route`."""

    def __init__(self, dead: tuple[str, ...] = (), route: str = "DIRECT",
                 answer: str | None = None) -> None:
        self.dead, self.route, self.answer = dead, route, answer
        self.seen: list[str | None] = []
        self.router_requests: list[RecordedRequest] = []
        self.turn_requests: list[RecordedRequest] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        if json.dumps(ROUTER_PROMPT)[1:60] in json.dumps(request.body):
            self.router_requests.append(request)
            return Reply(self.route)
        self.seen.append(request.model)
        if request.model in self.dead:
            return Fault.status(400, {"error": {"message": "unknown model"}})
        self.turn_requests.append(request)
        if self.answer is not None:
            return Reply(self.answer)
        done = any(m.get("role") == "tool" or m.get("type") == "function_call_output"
                   for m in request.body.get("messages") or request.body.get("input") or [])
        if done or "tool_result" in json.dumps(request.body):
            return Reply("3")
        return Reply(tool_calls=[call("add", {"a": 1, "b": 2})])


def on(server: FakeModelServer, model: str) -> dict[str, Any]:
    return {"model": model, "base_url": server.base_url, "api_key": "k"}


def statuses(events: list[Event], kind: str) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == kind]


def agent(server: FakeModelServer, events: list[Event], mode: str = "chat_completions",
          **kw: Any) -> Agent:
    kw.setdefault("tools", [add])
    return Agent("main-m", base_url=server.base_url, api_key="k", retry=FAST, api_mode=mode,
                 callbacks=[events.append], **kw)


@pytest.mark.parametrize("mode", MODES)
async def test_a_function_switches_the_model_for_the_calls_it_chooses(mode: str) -> None:
    seen: list[ChoiceContext] = []

    def choose(context: ChoiceContext) -> Any:
        seen.append(context)
        return on(server, "big-m") if context.turn == 2 else None

    events: list[Event] = []
    models = Models()
    with FakeModelServer(handler=models) as server:
        result = await agent(server, events, mode, choose_model=choose).run("add 1 and 2")
    assert result.output == "3"
    assert models.seen == ["main-m", "big-m"]
    assert [(c.turn, c.purpose, c.model, c.prompt, c.tools) for c in seen] == [
        (1, "turn", "main-m", "add 1 and 2", 1), (2, "turn", "main-m", "add 1 and 2", 1)]
    switch = statuses(events, "model_switch")
    assert [(s.data["from"], s.data["to"], s.data["enforced"]) for s in switch] == [
        ("main-m", "big-m", True)]
    records = [e.record for e in events if e.type == "model_call"]  # type: ignore[attr-defined]
    assert [r.model for r in records] == ["main-m", "big-m"]


async def test_a_suggestion_is_recorded_and_the_model_kept() -> None:
    events: list[Event] = []
    models = Models()
    with FakeModelServer(handler=models) as server:
        await agent(server, events, choose_model=lambda c: ModelChoice(
            "cheap-m", enforce=False, reason="short")).run("x")
    assert set(models.seen) == {"main-m"}
    assert [s.data["to"] for s in statuses(events, "model_suggested")] == ["cheap-m", "cheap-m"]


async def test_config_rules_match_the_prompt_and_a_dead_choice_falls_back_to_the_run_chain(
        ) -> None:
    events: list[Event] = []
    models = Models(dead=("dead-m",))
    with FakeModelServer(handler=models) as server:
        rules = [{"match": "^never", "model": on(server, "other-m")},
                 {"match": r"\badd\b", "turn": 1, "model": on(server, "dead-m")}]
        result = await agent(server, events, choose_model=rules).run("please ADD these")
    assert result.output == "3"
    assert models.seen == ["dead-m", "main-m", "main-m"]  # turn 1 fell back; turn 2: no rule
    assert statuses(events, "model_switch")[0].data["reason"] == "rule 2"
    assert statuses(events, "fallback")


async def test_a_failing_hook_keeps_the_model() -> None:
    events: list[Event] = []
    with FakeModelServer(handler=Models()) as server:
        result = await agent(server, events, choose_model=lambda c: 1 / 0).run("x")
    assert result.stop_reason == "completed"
    assert "division by zero" in statuses(events, "hook_error")[0].message


def test_bad_rules_fail_when_the_agent_is_built() -> None:
    for rules, message in (([{"match": "x"}], "at least 'model'"),
                           ([{"model": "m", "match": "("}], "bad 'match'"),
                           ([{"model": "m", "when": 1}], "unknown key")):
        with pytest.raises(ConfigError, match=message):
            Agent("m", base_url="http://127.0.0.1:9", choose_model=rules)


@pytest.mark.parametrize("mode", MODES)
async def test_the_router_answers_a_trivial_prompt_without_tool_definitions(mode: str) -> None:
    prompt = "What is the capital of France?"
    with FakeModelServer(handler=Models(answer="Paris.")) as server:
        baseline = await agent(server, [], mode, tools=default_tools()).run(prompt)
    events: list[Event] = []
    models = Models(answer="Paris.")
    with FakeModelServer(handler=models) as server:
        routed = await agent(server, events, mode, tools=default_tools(),
                             router=True).run(prompt)
    assert "tools" not in models.turn_requests[0].body or not models.turn_requests[0].body[
        "tools"]
    status = statuses(events, "routed")[0].data
    assert status["direct"] and status["tools_skipped"] == len(default_tools())
    assert routed.output == baseline.output == "Paris."
    router_cost = routed.side_usage["router"]["usage"]["input_tokens"]
    turn_saving = baseline.usage.input_tokens - (routed.usage.input_tokens - router_cost)
    # the tool definitions were most of the request: far more saved than the router spent
    assert turn_saving > 1_000 and turn_saving > 4 * router_cost
    assert routed.usage.input_tokens < baseline.usage.input_tokens / 2
    assert abs(status["tokens_saved"] - turn_saving) < turn_saving / 3  # the estimate holds


async def test_the_router_keeps_the_tools_unless_told_direct_and_is_off_by_default() -> None:
    models = Models(route="TOOLS")
    with FakeModelServer(handler=models) as server:
        result = await agent(server, [], router=True).run("add 1 and 2")
    assert result.output == "3" and models.turn_requests[0].body["tools"]
    plain = Models()
    with FakeModelServer(handler=plain) as server:
        await agent(server, []).run("add 1 and 2")
    assert plain.router_requests == []
