"""after_error (opt-in): after a failed call, a reply with no call is sent back once, with a
note that restates the request; never under `review = "auto"`, never after a call that
succeeded, after a call the review stage held back, or twice in a run."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
REQUEST = "What is the total of the amounts in sales.csv?"
FILES = {"sales.csv": "item,amount\nanvil,12\nrope,30\n"}


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file of the workspace."""
    if path not in FILES:
        raise FileNotFoundError(f"no such file: {path}")
    return FILES[path]


AFTER_ERROR = ["auto", "after_error"]


async def run(script: list[Reply], model: str = "qwen2.5-coder-1.5b",
              **options: Any) -> tuple[Any, FakeModelServer, list[ReviewEvent]]:
    options.setdefault("review", AFTER_ERROR)
    events: list[Event] = []
    with FakeModelServer(script, strict=False) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[read_file], callbacks=[events.append],
                             **options).run(REQUEST)
    return result, server, [e for e in events if isinstance(e, ReviewEvent)]


def last_user_text(server: FakeModelServer) -> str:
    return str(server.model_requests[-1].body["messages"][-1]["content"])


WRONG_PATH = Reply(tool_calls=[call("read_file", {"path": "data/sales.csv"})])
PROMISE_TEXT = "The file was not found at that path. I will retry with the correct path."
PROMISE = Reply(PROMISE_TEXT)


async def test_a_promise_after_a_failed_call_is_sent_back_and_the_corrected_call_runs() -> None:
    # the most common failure of Qwen2.5-Coder-1.5B on the dev2 split: right after a tool error
    # it ended its turn with prose and no call, and the run ended without an answer
    script = [WRONG_PATH, PROMISE, Reply(tool_calls=[call("read_file", {"path": "sales.csv"})]),
              Reply("The total is 42.")]
    result, server, reviews = await run(script)
    assert result.output == "The total is 42." and len(server.model_requests) == 4
    assert [(e.check, e.verdict, e.applied) for e in reviews] == [
        ("after_error", "send_back", True)]
    note = str(server.model_requests[2].body["messages"][-1]["content"])
    assert REQUEST in note and "read_file" in note and "no such file" in note


async def test_a_good_answer_after_an_error_is_sent_back_once_and_then_stands() -> None:
    answer = "sales.csv could not be read (no such file), so I cannot give the total."
    script = [WRONG_PATH, Reply(answer), Reply(answer)]
    result, server, reviews = await run(script)
    assert result.output == answer and len(server.model_requests) == 3
    assert [e.check for e in reviews] == ["after_error"]


async def test_it_sends_back_only_once_a_run() -> None:
    script = [WRONG_PATH, PROMISE, Reply(tool_calls=[call("read_file", {"path": "x.csv"})]),
              PROMISE]
    result, server, reviews = await run(script)
    assert result.output == PROMISE_TEXT and len(server.model_requests) == 4
    assert [e.check for e in reviews] == ["after_error"]


@pytest.mark.parametrize(("model", "mode"), [("gpt-4.1", "chat_completions"),
                                             ("claude-sonnet-4-5", "anthropic_messages"),
                                             ("qwen2.5-coder-1.5b", "chat_completions")])
async def test_under_auto_no_model_is_sent_back(model: str, mode: str) -> None:
    result, server, reviews = await run([WRONG_PATH, PROMISE], model=model, api_mode=mode,
                                        review="auto")
    assert result.output == PROMISE_TEXT and len(server.model_requests) == 2
    assert reviews == []


async def test_an_answer_after_a_call_that_succeeded_is_the_answer() -> None:
    # an error earlier in the run does not count: the latest results succeeded
    script = [WRONG_PATH, Reply(tool_calls=[call("read_file", {"path": "sales.csv"})]),
              Reply("The total is 42.")]
    result, server, reviews = await run(script)
    assert result.output == "The total is 42." and len(server.model_requests) == 3
    assert reviews == []


async def test_an_answer_after_a_call_the_review_stage_held_back_is_the_answer() -> None:
    # the duplicate of a call in one reply gets the runtime's "Not run" note, an error result
    # that is no failed call
    twice = Reply(tool_calls=[call("read_file", {"path": "sales.csv"}),
                              call("read_file", {"path": "sales.csv"})])
    result, server, reviews = await run([twice, Reply("The total is 42.")])
    assert result.output == "The total is 42." and len(server.model_requests) == 2
    assert [e.check for e in reviews] == ["duplicate_calls"]


@pytest.mark.parametrize("options", [{"review": "off"},
                                     {"review": "all", "review_off": ["after_error"]}],
                         ids=["review-off", "check-off"])
async def test_it_can_be_turned_off(options: dict[str, Any]) -> None:
    result, server, _ = await run([WRONG_PATH, PROMISE], **options)
    assert result.output == PROMISE_TEXT and len(server.model_requests) == 2


async def test_review_all_gives_it_to_a_frontier_model_too() -> None:
    script = [WRONG_PATH, PROMISE, Reply("sales.csv is missing.")]
    result, server, reviews = await run(script, model="gpt-4.1", review="all")
    assert result.output == "sales.csv is missing." and [e.check for e in reviews] == [
        "after_error"]
    assert REQUEST in last_user_text(server)
