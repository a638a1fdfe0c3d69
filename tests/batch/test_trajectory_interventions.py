"""Trajectories mark what the runtime wrote and only that: the task is the user's whatever its
words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batch_support import read_jsonl

from loopwright.batch import run_batch
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
