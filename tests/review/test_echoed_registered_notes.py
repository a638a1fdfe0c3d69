"""The grader's revision note and structured output's "not valid" note are registered notes
(notes.py): an answer that repeats either is an echo `echoed_note` sends back; a good answer
that only talks about rubrics or invalid JSON is not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.grading import GRADER_PROMPT
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem

FAST = RetryPolicy(base_delay=0.01, jitter=0)
ECHO_ON = ["auto", "echoed_note"]


class Split:
    """The agent's replies and the grader's, each from its own script."""

    def __init__(self, agent: list[ScriptItem], grader: list[ScriptItem]) -> None:
        self.agent, self.grader = list(agent), list(grader)
        self.agent_requests: list[RecordedRequest] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        messages = request.body["messages"]
        if messages and messages[0]["content"] == GRADER_PROMPT:
            return self.grader.pop(0)
        self.agent_requests.append(request)
        return self.agent.pop(0)


def grade(verdict: str, feedback: str = "") -> Reply:
    return Reply(json.dumps({"verdict": verdict, "feedback": feedback}))


async def graded_run(agent_replies: list[str], grader: list[Reply], review: Any
                     ) -> tuple[str, list[ReviewEvent], Split]:
    split = Split([Reply(text) for text in agent_replies], grader)
    events: list[Event] = []
    with FakeModelServer(handler=split) as server:
        result = await Agent("qwen2.5-coder:1.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=False, rubric="State the distance with its unit.",
                             review=review, callbacks=[events.append]).run("How far is it?")
    return result.output, [e for e in events if isinstance(e, ReviewEvent)], split


async def test_an_answer_echoing_the_graders_revision_note_is_sent_back() -> None:
    echo = ("A reviewer checked your answer against the rubric and asked for a revision: "
            "the unit is missing.")
    output, events, split = await graded_run(
        ["It is 5.", echo, "It is 5 km."],
        [grade("needs_revision", "The unit is missing."), grade("satisfied")], ECHO_ON)
    assert output == "It is 5 km."
    assert [(e.check, e.verdict) for e in events] == [("echoed_note", "send_back")]
    # the revision note itself reached the model as before
    assert "asked for a revision:\n\nThe unit is missing.\n\nFix these points" in \
        split.agent_requests[1].body["messages"][-1]["content"]


async def test_with_echoed_note_off_the_echo_reaches_the_grader() -> None:
    echo = "A reviewer checked your answer against the rubric and asked for a revision."
    output, events, _ = await graded_run(
        ["It is 5.", echo], [grade("needs_revision", "The unit is missing."), grade("satisfied")],
        "auto")
    assert output == echo
    assert not events


@pytest.mark.parametrize("echo", [
    "Your final answer is not valid:\n- total: Field required",
    "Sorry. Your final answer is not valid: reply with only the JSON object, matching this JSON "
    "schema exactly: {\"type\": \"object\"}",
])
async def test_an_answer_echoing_the_structured_output_note_is_sent_back(echo: str) -> None:
    events: list[Event] = []
    with FakeModelServer([Reply(echo), Reply("The total is 42.")]) as server:
        result = await Agent("qwen2.5-coder:1.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=False, review=ECHO_ON,
                             callbacks=[events.append]).run("What is the total?")
    assert result.output == "The total is 42."
    assert [e.check for e in events if isinstance(e, ReviewEvent)] == ["echoed_note"]


@pytest.mark.parametrize("answer", [
    "The rubric asks for the distance with its unit: it is 5 km.",
    "Your JSON is not valid: line 3 has a trailing comma. Remove it and it parses.",
    "The final answer is 42; the schema requires an integer, which it is.",
    "A reviewer checked the report and found no problems.",
])
async def test_a_good_answer_about_rubrics_or_invalid_json_is_not_an_echo(answer: str) -> None:
    events: list[Event] = []
    with FakeModelServer([Reply(answer)]) as server:
        result = await Agent("qwen2.5-coder:1.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=False, review=ECHO_ON,
                             callbacks=[events.append]).run("Check it.")
    assert result.output == answer
    assert not [e for e in events if isinstance(e, ReviewEvent)]
