"""answer_again (opt-in): a failing call made once more after the doom loop's warning gets one
request for an answer (with its error and the user's request) before the run would stop; under
"auto", or with the budget spent, or a second time, the run stops as before. (The case of a
call made where an answer was asked for: tests/review/test_doom_loop.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
REQUEST = "Did CI build 512 pass?"
ANSWER = "The CI server is unreachable, so I cannot tell whether build 512 passed."


@tool(read_only=True)
def get_build_status(build: int) -> str:
    """The status of a CI build."""
    raise ConnectionError("CI server unreachable (connection refused)")


def status(copies: int = 1) -> Reply:
    return Reply(tool_calls=[call("get_build_status", {"build": 512}) for _ in range(copies)])


# Qwen2.5-Coder-0.5B on the dev2 split: the failing call, then copies of it, until the run
# stopped with no answer
FAILING = [status(), status(10), status(), status()]


async def run(script: list[Reply], model: str = "qwen2.5-coder-0.5b",
              **options: Any) -> tuple[Any, FakeModelServer, list[ReviewEvent]]:
    events: list[Event] = []
    with FakeModelServer(script, strict=False) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[get_build_status], callbacks=[events.append],
                             max_turns=10, **options).run(REQUEST)
    return result, server, [e for e in events if isinstance(e, ReviewEvent)]


async def test_a_failing_call_made_once_more_gets_one_request_for_an_answer() -> None:
    result, server, reviews = await run([*FAILING, Reply(ANSWER)],
                                        review=["auto", "answer_again"])
    assert (result.stop_reason, result.output) == ("completed", ANSWER)
    last = server.model_requests[4].body
    assert last.get("tool_choice") == "none"
    asked = str(last["messages"][-1]["content"])
    assert REQUEST in asked and "connection refused" in asked and "get_build_status" in asked
    assert "answer_again" in [e.check for e in reviews]


@pytest.mark.parametrize("options", [{"review": "auto"},
                                     {"review": ["auto", "answer_again"], "review_budget": 0}],
                         ids=["auto", "budget-spent"])
async def test_without_it_or_its_budget_the_run_stops_as_before(options: dict[str, Any]) -> None:
    result, server, _ = await run([*FAILING, Reply(ANSWER)], **options)
    assert result.stop_reason == "loop_detected" and len(server.model_requests) == 4


async def test_a_call_where_the_answer_was_asked_for_then_stops() -> None:
    result, server, _ = await run([*FAILING, status()], review=["auto", "answer_again"])
    assert result.stop_reason == "loop_detected" and len(server.model_requests) == 5


async def test_a_call_that_failed_fewer_times_runs_as_before() -> None:
    # two failures, then a different call and an answer: nothing to ask for
    script = [status(), status(), Reply(tool_calls=[call("get_build_status", {"build": 511})]),
              Reply(ANSWER)]
    result, server, reviews = await run(script, review=["auto", "answer_again"])
    assert result.output == ANSWER and len(server.model_requests) == 4
    assert "answer_again" not in [e.check for e in reviews]


async def test_without_the_doom_loop_there_is_no_stop_to_head_off() -> None:
    # it reads the doom loop's record of the run: with the doom loop off the calls run on
    result, server, reviews = await run([*FAILING, Reply(ANSWER)],
                                        review=["auto", "answer_again"], review_off=["doom_loop"])
    assert (result.stop_reason, result.output) == ("completed", ANSWER)
    assert len(server.model_requests) == 5
    assert "answer_again" not in [e.check for e in reviews]
