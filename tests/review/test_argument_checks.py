"""`unknown_tool` and `bad_arguments`: structural call checks of the review stage, for every
model. A call they stop is answered with the executor's own error text (the same as with review
off) and told as one `review` event that costs no budget; a good call runs with the arguments
they validated; with the check off the executor still refuses the call, silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent, ToolResultEvent
from loopwright.review import Check, ReviewView, Verdict, skip_call
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.testing.scripted import ScriptedCall
from loopwright.tools.base import Tool

FAST = RetryPolicy(base_delay=0.01, jitter=0)
MODELS = ["gpt-4.1", "qwen2.5-coder:1.5b"]  # a frontier model and a small local one
RAN: list[dict[str, Any]] = []


async def _read_file(**arguments: Any) -> str:
    RAN.append(arguments)
    return f"contents of {arguments['path']}"


READ_FILE = Tool(name="read_file", description="Read a file.", function=_read_file,
                 read_only=True, parameters={
                     "type": "object", "properties": {"path": {"type": "string"}},
                     "required": ["path"], "additionalProperties": False})

BAD = {  # what the model sent → the check that stops it, and what the reason says
    "unknown tool": (call("grep", {"pattern": "x"}), "unknown_tool", "no tool of that name"),
    "arguments not a JSON object": (call("read_file", '["a.txt"]'), "bad_arguments",
                                    "not a JSON object"),
    "the schema echoed": (call("read_file", {"type": "object", "properties": {
        "path": {"type": "string"}}, "required": ["path"]}), "bad_arguments", "schema"),
    "a copied placeholder": (call("read_file", {"path": "..."}), "bad_arguments",
                             "placeholder"),
    "arguments that do not validate": (call("read_file", {"file": "a.txt"}), "bad_arguments",
                                       "do not match"),
}


async def run_one(model: str, bad: ScriptedCall, **options: Any
                  ) -> tuple[list[ReviewEvent], str, list[ToolResultEvent]]:
    """One bad call, then an answer: the review events, the result the model read next, and
    the `tool_result` events."""
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=[bad]), Reply("Done.")]) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", stream=False,
                             api_mode="chat_completions", retry=FAST, tools=[READ_FILE],
                             callbacks=[events.append], **options).run("Read a.txt")
        sent = server.model_requests[1].body["messages"][-1]
    assert result.output == "Done."
    assert sent["role"] == "tool"
    return ([e for e in events if isinstance(e, ReviewEvent)], sent["content"],
            [e for e in events if isinstance(e, ToolResultEvent)])


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", list(BAD))
async def test_a_bad_call_is_one_review_event_and_the_model_reads_the_same_error(
        model: str, kind: str) -> None:
    bad, check, reason = BAD[kind]
    RAN.clear()
    events, read, results = await run_one(model, bad)
    _, read_with_review_off, _ = await run_one(model, bad, review="off")
    assert not RAN  # the tool never ran
    assert len(events) == 1
    event = events[0]
    assert (event.check, event.verdict, event.applied) == (check, "skip_call", True)
    assert reason in event.reason and bad.name in event.reason
    assert event.budget_left == 2  # the default review_budget, untouched: nothing sent back
    assert event.call_id == results[0].id
    assert read == read_with_review_off  # byte for byte what the executor answers
    assert read.startswith("Error: ")
    assert results[0].is_error and results[0].content == read


async def test_the_error_texts_are_the_executors() -> None:
    _, unknown, results = await run_one("gpt-4.1", BAD["unknown tool"][0])
    assert unknown.startswith("Error: there is no tool named 'grep'. Tools you can call: "
                              "read_file.")
    assert results[0].data.get("unknown_tool")  # the executor's own data, kept
    _, placeholder, results = await run_one("gpt-4.1", BAD["a copied placeholder"][0])
    assert placeholder.startswith("Error: 'path' still hold the example's placeholder '...'")
    assert results[0].data == {"bad_arguments": True, "placeholder": True}


@pytest.mark.parametrize("model", MODELS)
async def test_a_good_call_runs_with_no_review_event(model: str) -> None:
    RAN.clear()
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=[call("read_file", {"path": "a.txt"})]),
                          Reply("Done.")]) as server:
        await Agent(model, base_url=server.base_url, api_key="k", stream=False,
                    api_mode="chat_completions", retry=FAST, tools=[READ_FILE],
                    callbacks=[events.append]).run("Read a.txt")
        sent = server.model_requests[1].body["messages"][-1]
    assert not [e for e in events if isinstance(e, ReviewEvent)]
    assert RAN == [{"path": "a.txt"}]
    assert sent["content"] == "contents of a.txt"


@pytest.mark.parametrize("review", ["off", ["duplicate_calls", "doom_loop"]])
async def test_with_the_checks_off_the_call_is_still_refused_without_an_event(
        review: Any) -> None:
    for bad, _, _ in BAD.values():
        RAN.clear()
        events, read, _ = await run_one("gpt-4.1", bad, review=review)
        assert not events
        assert not RAN
        assert read.startswith("Error: ")


async def test_the_checks_run_and_cost_nothing_with_the_budget_spent() -> None:
    events, read, _ = await run_one("gpt-4.1", BAD["a copied placeholder"][0], review_budget=0)
    assert [(e.check, e.applied, e.budget_left) for e in events] == [("bad_arguments", True, 0)]
    assert "placeholder" in read


async def test_review_off_names_each_check() -> None:
    events, _, _ = await run_one("gpt-4.1", BAD["unknown tool"][0], review_off=["unknown_tool"])
    assert not events
    events, _, _ = await run_one("gpt-4.1", BAD["a copied placeholder"][0],
                                 review_off=["unknown_tool"])
    assert [e.check for e in events] == ["bad_arguments"]
    events, _, _ = await run_one("gpt-4.1", BAD["unknown tool"][0], review=["unknown_tool"])
    assert [e.check for e in events] == ["unknown_tool"]


class NoGrep(Check):
    """A user's check placed before `unknown_tool`: it answers calls to `grep` itself."""

    name = "no_grep"
    stage = "calls"
    position = "before:unknown_tool"

    async def review(self, view: ReviewView) -> list[Verdict]:
        return [skip_call(c.id, "Use read_file.", "grep is not offered")
                for c in view.calls if c.name == "grep"]


async def test_a_user_check_placed_before_unknown_tool_decides_first() -> None:
    events, read, _ = await run_one("gpt-4.1", BAD["unknown tool"][0], review_checks=[NoGrep()])
    assert [e.check for e in events] == ["no_grep"]
    assert read == "Use read_file."


async def test_a_call_repeated_with_the_same_bad_arguments_is_still_a_loop(tmp_path: Path) -> None:
    # the argument checks come after the doom loop in the table: it still counts the repeats,
    # and the error each got is the result it knows
    bad = call("read_file", {"file": "a.txt"})
    events: list[Event] = []
    script = [Reply(tool_calls=[bad]) for _ in range(4)]
    with FakeModelServer(script) as server:
        result = await Agent("gpt-4.1", base_url=server.base_url, api_key="k", stream=False,
                             api_mode="chat_completions", retry=FAST, tools=[READ_FILE],
                             callbacks=[events.append], workdir=str(tmp_path)).run("Read a.txt")
        third = server.model_requests[3].body["messages"][-1]["content"]
    checks = [e.check for e in events if isinstance(e, ReviewEvent)]
    assert checks == ["bad_arguments", "bad_arguments", "doom_loop", "doom_loop", "doom_loop"]
    assert result.stop_reason == "loop_detected"
    # the warning quotes the error the call kept getting (its last result)
    assert "Its last result was: Error: the arguments for tool 'read_file'" in third


async def test_a_runaway_tool_name_is_not_repeated_whole_in_the_review_event() -> None:
    """The error the model reads cut a 100,000-character name; the `review` event (in --json,
    SSE, the session and the page) still carried it whole."""
    events, read, _ = await run_one("gpt-4.1", call("x" * 100_000, {}))
    (event,) = events
    assert event.check == "unknown_tool"
    assert len(event.reason) < 300 and "(100,000 characters)" in event.reason
    assert "(100,000 characters)" in read
