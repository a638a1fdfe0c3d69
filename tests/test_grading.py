"""Rubric self-grading (grading.py) through `Agent` against the fake model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.grading import GRADER_PROMPT
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
RUBRIC = "The answer must state the distance with its unit."


def verdict(name: str, feedback: str = "") -> Reply:
    return Reply(json.dumps({"verdict": name, "feedback": feedback}))


def is_grader(request: RecordedRequest) -> bool:
    messages = request.body["messages"]
    return bool(messages) and messages[0]["content"] == GRADER_PROMPT


class Split:
    """A handler serving the agent's script and the grader's script separately."""

    def __init__(self, agent: list[ScriptItem], grader: list[ScriptItem]) -> None:
        self.agent, self.grader = list(agent), list(grader)
        self.agent_requests: list[RecordedRequest] = []
        self.grader_requests: list[RecordedRequest] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        grading = is_grader(request)
        (self.grader_requests if grading else self.agent_requests).append(request)
        script = self.grader if grading else self.agent
        return script.pop(0) if script else Reply("(script ended)")


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    kwargs.setdefault("rubric", RUBRIC)
    return Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST, **kwargs)


def grading_status(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "status" and e.kind == "grading"]


async def test_a_satisfying_answer_completes_with_the_grade_recorded() -> None:
    split = Split(agent=[Reply("It is 5 km.")], grader=[verdict("satisfied", "clear")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server).run("How far is it?")
    assert result.stop_reason == "completed"
    assert result.output == "It is 5 km."
    assert result.grade == {"verdict": "satisfied", "feedback": "clear", "rounds": 1,
                            "revisions": 0, "graded": True}
    body = split.grader_requests[0].body
    assert "tools" not in body or not body["tools"]
    user = body["messages"][1]["content"]
    assert RUBRIC in user and "## Final answer\nIt is 5 km." in user
    assert "USER: How far is it?" in user  # the condensed transcript


async def test_needs_revision_feeds_the_feedback_back_and_the_revision_is_graded() -> None:
    split = Split(agent=[Reply("It is 5."), Reply("It is 5 km.")],
                  grader=[verdict("needs_revision", "Give the unit."), verdict("satisfied")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server).run("How far is it?")
    assert result.stop_reason == "completed"
    assert result.output == "It is 5 km."
    assert result.grade is not None
    assert result.grade["verdict"] == "satisfied"
    assert (result.grade["rounds"], result.grade["revisions"]) == (2, 1)
    revision_request = split.agent_requests[1].body["messages"]
    assert revision_request[-1]["role"] == "user"
    assert "Give the unit." in revision_request[-1]["content"]


async def test_revisions_stop_after_max_rubric_rounds() -> None:
    split = Split(agent=[Reply("5"), Reply("five")],
                  grader=[verdict("needs_revision", "unit?"), verdict("needs_revision", "unit!")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server, max_rubric_rounds=1).run("How far?")
    assert result.stop_reason == "completed"
    assert result.output == "five"
    assert result.grade == {"verdict": "needs_revision", "feedback": "unit!", "rounds": 2,
                            "revisions": 1, "graded": True}
    assert len(split.agent_requests) == 2


async def test_a_failed_verdict_ends_the_run_with_the_grade() -> None:
    split = Split(agent=[Reply("I cannot measure that.")],
                  grader=[verdict("failed", "the distance is unknowable here")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server).run("How far is Mars today?")
    assert result.stop_reason == "completed"
    assert result.grade is not None and result.grade["verdict"] == "failed"
    assert len(split.agent_requests) == 1


async def test_a_grader_http_error_fails_open_and_is_reported_ungraded() -> None:
    events: list[Event] = []
    split = Split(agent=[Reply("It is 5 km.")],
                  grader=[Fault.status(400, body={"error": {"message": "bad grader"}})])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server, callbacks=[events.append]).run("How far?")
    assert result.stop_reason == "completed"
    assert result.output == "It is 5 km."
    assert result.grade is not None
    assert result.grade["graded"] is False and result.grade["verdict"] is None
    assert "400" in result.grade["error"]
    assert grading_status(events)[-1]["graded"] is False


async def test_an_unparsable_grader_reply_is_ungraded_never_a_pass() -> None:
    split = Split(agent=[Reply("It is 5 km.")], grader=[Reply("Looks fine to me!")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server).run("How far?")
    assert result.grade is not None
    assert result.grade["graded"] is False and result.grade["verdict"] is None


async def test_the_verdict_is_parsed_leniently() -> None:
    sloppy = ("Here is my assessment:\n```json\n"
              "{'verdict': 'Needs Revision', 'feedback': 'add the unit',}\n```")
    split = Split(agent=[Reply("5"), Reply("5 km")],
                  grader=[Reply(sloppy), verdict("satisfied")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server).run("How far?")
    assert result.output == "5 km"
    assert result.grade is not None and result.grade["revisions"] == 1


async def test_streaming_runs_keep_the_grader_out_of_the_text_stream() -> None:
    split = Split(agent=[Reply("It is 5 km.")], grader=[verdict("satisfied", "SECRET-GRADER")])
    events: list[Event] = []
    with FakeModelServer(handler=split) as server:
        async for event in make_agent(server, stream=True).stream("How far?"):
            events.append(event)
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text == "It is 5 km."
    assert split.agent_requests[0].stream and not split.grader_requests[0].stream
    statuses = grading_status(events)
    assert statuses[-1]["verdict"] == "satisfied"
    done = events[-1]
    assert done.type == "done" and done.result.grade["verdict"] == "satisfied"


async def test_the_rubric_can_come_from_a_file(tmp_path: Path) -> None:
    rubric_file = tmp_path / "rubric.md"
    rubric_file.write_text("Every claim needs a source.", encoding="utf-8")
    split = Split(agent=[Reply("Claim (source: x).")], grader=[verdict("satisfied")])
    with FakeModelServer(handler=split) as server:
        result = await make_agent(server, rubric=f"@{rubric_file}").run("Claim something.")
    assert result.grade is not None and result.grade["graded"] is True
    assert "Every claim needs a source." in split.grader_requests[0].body["messages"][1]["content"]


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a value up."""
    return f"value of {key}"


async def test_tool_work_appears_in_the_condensed_transcript() -> None:
    split = Split(agent=[Reply(tool_calls=[call("lookup", {"key": "dist"})]), Reply("5 km")],
                  grader=[verdict("satisfied")])
    with FakeModelServer(handler=split) as server:
        await make_agent(server, tools=[lookup]).run("How far?")
    transcript = split.grader_requests[0].body["messages"][1]["content"]
    assert 'TOOL CALL lookup({"key":"dist"})' in transcript
    assert "TOOL RESULT lookup: value of dist" in transcript


async def test_a_run_that_ends_before_an_answer_is_recorded_as_ungraded() -> None:
    def looping(request: RecordedRequest) -> ScriptItem:
        return Reply(tool_calls=[call("lookup", {"key": "again"})])

    with FakeModelServer(handler=looping) as server:
        result = await make_agent(server, tools=[lookup], max_turns=2).run("go")
    assert result.stop_reason == "max_turns"
    assert result.grade is not None
    assert result.grade["graded"] is False and result.grade["rounds"] == 0


def test_the_cli_rubric_flag_reads_a_file_and_reports_the_grade(tmp_path: Path) -> None:
    rubric_file = tmp_path / "rubric.md"
    rubric_file.write_text("Name the unit.", encoding="utf-8")
    split = Split(agent=[Reply("5 km")], grader=[verdict("satisfied", "unit named")])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOOPWRIGHT_", "XDG_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_"))}
    env["HOME"] = str(tmp_path)
    with FakeModelServer(handler=split) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "How far?", "--json", "--model", "m",
             "--base-url", server.base_url, "--rubric", f"@{rubric_file}"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["type"] == "done"
    assert final["result"]["grade"]["verdict"] == "satisfied"
    assert "Name the unit." in split.grader_requests[0].body["messages"][1]["content"]
