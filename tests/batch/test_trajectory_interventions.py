"""Trajectories mark what the runtime wrote and only that: the task is the user's whatever its
words, and a grader's revision note is the runtime's — the answer it sent back gets weight 0, and
`--drop-interventions` leaves both out, leaving a history of alternating turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batch_support import read_jsonl, write_tasks
from typer.testing import CliRunner

from loopwright.batch import run_batch
from loopwright.cli.main import app
from loopwright.testing import FakeModelServer, Reply


def turns(item: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(m["role"], m["content"], m.get("weight")) for m in item["messages"]
            if m["role"] != "system"]


@pytest.mark.parametrize("prompt", [
    "Do not call any tool now. What is 2 + 2?",  # begins like the runtime's `answer_now` note
    "Your last reply was empty. Say hello.",  # like its `empty_reply` note
    "Summarise the work done so far, what remains and the next step.",  # `budget_summary`
])
@pytest.mark.parametrize("interventions", ["mark", "drop"])
async def test_the_task_is_never_taken_for_a_runtime_note(
        prompt: str, interventions: str, tmp_path: Path) -> None:
    with FakeModelServer([Reply("4.")]) as server:
        await run_batch([{"id": "t", "prompt": prompt}], tmp_path / "out", trajectories="openai",
                        interventions=interventions, model="gpt-4.1",
                        base_url=server.base_url, api_key="k", stream=False)
    [item] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert turns(item) == [("user", prompt, None), ("assistant", "4.", None)]
    assert "interventions" not in item["meta"]


def verdict(kind: str, feedback: str = "") -> Reply:
    return Reply(json.dumps({"verdict": kind, "feedback": feedback}))


GRADED = [Reply("5"), verdict("needs_revision", "2 + 2 is not 5."), Reply("4"),
          verdict("satisfied")]


async def test_a_graders_revision_note_is_marked_and_the_answer_it_sent_back_weighs_0(
        tmp_path: Path) -> None:
    with FakeModelServer(GRADED) as server:
        await run_batch([{"id": "t", "prompt": "What is 2 + 2?"}], tmp_path / "out",
                        trajectories="openai", model="gpt-4.1", base_url=server.base_url,
                        api_key="k", stream=False, rubric="The answer is 4.")
    [item] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert [(role, weight) for role, _, weight in turns(item)] == [
        ("user", None), ("assistant", 0), ("user", None), ("assistant", None)]
    assert item["meta"]["interventions"] == {"set_aside": [2], "runtime_notes": [3]}
    assert turns(item)[2][1].startswith("A reviewer checked your answer")


def test_drop_interventions_leaves_the_task_and_the_revised_answer(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "t", "prompt": "What is 2 + 2?"})
    with FakeModelServer(GRADED) as server:
        result = CliRunner().invoke(app, [
            "batch", str(tasks), "--out", str(tmp_path / "out"), "--trajectories", "sharegpt",
            "--drop-interventions", "--model", "gpt-4.1", "--base-url", server.base_url,
            "--no-progress"], env={"LOOPWRIGHT_RUBRIC": "The answer is 4.",
                                   "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    [item] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert item["conversations"] == [{"from": "human", "value": "What is 2 + 2?"},
                                     {"from": "gpt", "value": "4"}]
