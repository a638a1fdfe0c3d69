"""sample_again: a small local model that repeats a call which just failed, with the same
arguments, has that reply set aside and the same request sent once more, warmer and seeded,
instead of the call running again; not for a call that succeeded, a changed call, a second time
for the same call, with the budget spent, without the doom loop, or for a frontier model."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.review.sample_again import WARMER
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
REQUEST = "Who repaired printer-3f most recently? Give me their phone number."
ANSWER = "Dana Ruiz repaired it last; her phone number is 555-0142."
RAN: list[str] = []


@tool(read_only=True)
def get_phone(user: str) -> str:
    """A user's phone number."""
    RAN.append(user)
    if user != "dana":
        raise KeyError(f"no user {user}")
    return "555-0142"


def phone(user: str, copies: int = 1) -> Reply:
    return Reply(tool_calls=[call("get_phone", {"user": user}) for _ in range(copies)])


async def run(script: list[Reply], model: str = "qwen2.5-coder-0.5b", **options: Any
              ) -> tuple[Any, FakeModelServer, list[ReviewEvent]]:
    RAN.clear()
    events: list[Event] = []
    options.setdefault("review", ["auto", "sample_again"])
    with FakeModelServer(script, strict=False) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[get_phone], callbacks=[events.append],
                             temperature=0.0, max_turns=10, **options).run(REQUEST)
    return result, server, [e for e in events if isinstance(e, ReviewEvent)]


def sampled(server: FakeModelServer) -> list[tuple[Any, Any]]:
    return [(r.body.get("temperature"), r.body.get("seed")) for r in server.model_requests]


async def test_a_repeated_failing_call_is_asked_for_again_warmer_not_run() -> None:
    # Qwen2.5-Coder-0.5B on dev2: the failing call again, copied through the reply
    script = [phone("printer-3f"), phone("printer-3f", copies=20), phone("dana"), Reply(ANSWER)]
    result, server, reviews = await run(script)
    assert (result.stop_reason, result.output) == ("completed", ANSWER)
    assert RAN == ["printer-3f", "dana"]  # the repeat never ran
    temps = sampled(server)
    assert temps[0] == (0.0, None) and temps[1] == (0.0, None)
    assert temps[2][0] == WARMER and isinstance(temps[2][1], int)
    assert temps[3] == (0.0, None)  # only the one request goes warmer
    # the same request once more: the set-aside reply and its results are not in it
    assert server.model_requests[2].body["messages"] == server.model_requests[1].body["messages"]
    assert [e.verdict for e in reviews if e.check == "sample_again"][-1] == "sample_again"
    assert reviews[-1].budget_left == 1


async def test_the_seed_is_the_same_on_every_run() -> None:
    script = [phone("printer-3f"), phone("printer-3f"), phone("dana"), Reply(ANSWER)]
    _, first, _ = await run(script)
    _, second, _ = await run(script)
    assert sampled(first) == sampled(second)


@pytest.mark.parametrize("script", [
    # a call that succeeded, made again (a poll may change): it runs
    [phone("dana"), phone("dana"), Reply(ANSWER)],
    # the failing call changed: it runs
    [phone("printer-3f"), phone("dana"), Reply(ANSWER)],
], ids=["succeeded", "changed"])
async def test_a_call_that_did_not_fail_or_changed_runs(script: list[Reply]) -> None:
    result, server, reviews = await run(script)
    assert result.output == ANSWER and len(server.model_requests) == 3
    assert all(t == 0.0 for t, _ in sampled(server))
    assert "sample_again" not in [e.check for e in reviews]


async def test_once_per_call_then_the_doom_loop_as_before() -> None:
    script = [phone("printer-3f")] * 6 + [Reply(ANSWER)]
    result, _, reviews = await run(script)
    assert len([e for e in reviews if e.verdict == "sample_again"]) == 1
    assert result.stop_reason == "loop_detected"


@pytest.mark.parametrize("options", [
    {"review_budget": 0},
    {"review_off": ["doom_loop"]},
    {"review": "auto"},
], ids=["budget-spent", "no-doom-loop", "auto-opt-in"])
async def test_it_does_not_fire_without_its_budget_the_doom_loop_or_being_named(
        options: dict[str, Any]) -> None:
    script = [phone("printer-3f"), phone("printer-3f"), phone("dana"), Reply(ANSWER)]
    result, server, reviews = await run(script, **options)
    assert result.output == ANSWER and RAN == ["printer-3f", "printer-3f", "dana"]
    assert all(t == 0.0 for t, _ in sampled(server))
    assert "sample_again" not in [e.verdict for e in reviews]
