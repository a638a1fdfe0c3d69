"""Side models: the compaction summary and the rubric grader go to their own model (and its own
fallbacks) when one is set, else to the main model — through the real HTTP stack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError
from loopwright.grading import GRADER_PROMPT
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(attempts=2, base_delay=0.01, jitter=0)


@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\n" for n in range(60))


def purpose(request: RecordedRequest) -> str:
    """Which kind of call a request is, in any wire format (by its system prompt)."""
    sent = json.dumps(request.body)
    if json.dumps(SUMMARY_SYSTEM)[1:80] in sent:
        return "summary"
    return "grader" if json.dumps(GRADER_PROMPT)[1:60] in sent else "turn"


class ByModel:
    """Records which model each kind of call went to; the turns dump `parts` parts, then
    answer; a model named in `dead` fails for good."""

    def __init__(self, parts: int = 0, dead: tuple[str, ...] = ()) -> None:
        self.parts, self.dead = parts, dead
        self.seen: list[tuple[str, str | None]] = []
        self.turns = 0

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        kind = purpose(request)
        self.seen.append((kind, request.model))
        if request.model in self.dead:
            return Fault.status(400, {"error": {"message": "no such model"}})
        if kind == "summary":
            return Reply("## Goal\nsummarised")
        if kind == "grader":
            return Reply('{"verdict": "satisfied", "feedback": ""}')
        self.turns += 1
        if self.turns <= self.parts:
            return Reply(tool_calls=[call("dump", {"part": self.turns})])
        return Reply("final answer")


def side(server: FakeModelServer, model: str) -> dict[str, Any]:
    return {"model": model, "base_url": server.base_url, "api_key": "k"}


@pytest.mark.parametrize("mode", ["chat_completions", "anthropic_messages", "responses"])
async def test_the_grader_uses_its_own_model_and_falls_back_on_its_own_chain(mode: str) -> None:
    handler = ByModel(dead=("grader-a",))
    with FakeModelServer(handler=handler) as server:
        agent = Agent("main-m", base_url=server.base_url, api_key="k", retry=FAST,
                      api_mode=mode, rubric="be right", grader_model=side(server, "grader-a"),
                      grader_fallbacks=[side(server, "grader-b")])
        result = await agent.run("question")
    assert result.grade is not None and result.grade["verdict"] == "satisfied"
    assert [m for kind, m in handler.seen if kind == "grader"] == ["grader-a", "grader-b"]
    assert {m for kind, m in handler.seen if kind == "turn"} == {"main-m"}
    grading = result.side_usage["grading"]  # counted apart from the turns, and in the totals
    assert (grading["calls"], grading["models"]) == (1, ["grader-b"])
    assert 0 < grading["usage"]["output_tokens"] < result.usage.output_tokens
    assert list(result.side_usage) == ["grading"]


async def test_compaction_summaries_go_to_the_summary_model(tmp_path: Path) -> None:
    handler = ByModel(parts=20)
    with FakeModelServer(handler=handler) as server:
        agent = Agent("main-m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[dump], context_window=4_096, cache_dir=str(tmp_path),
                      summary_model=side(server, "small-m"))
        result = await agent.run("dump everything")
    assert result.stop_reason == "completed", result.error
    summaries = [m for kind, m in handler.seen if kind == "summary"]
    assert summaries and set(summaries) == {"small-m"}
    assert {m for kind, m in handler.seen if kind == "turn"} == {"main-m"}


async def test_without_side_models_every_call_goes_to_the_main_model() -> None:
    handler = ByModel()
    with FakeModelServer(handler=handler) as server:
        await Agent("main-m", base_url=server.base_url, api_key="k", retry=FAST,
                    rubric="be right").run("q")
    assert handler.seen == [("turn", "main-m"), ("grader", "main-m")]


def test_fallbacks_without_a_side_model_or_a_bad_one_fail_when_the_agent_is_built() -> None:
    with pytest.raises(ConfigError, match="grader_fallbacks is set but grader_model is not"):
        Agent("m", base_url="http://127.0.0.1:9", grader_fallbacks=["x"])
    with pytest.raises(ConfigError, match="summary_model = 42 is not valid"):
        Agent("m", base_url="http://127.0.0.1:9", summary_model=42)  # type: ignore[typeddict-item]
    with pytest.raises(ConfigError, match=r"summary_model .* at least 'model'"):
        Agent("m", base_url="http://127.0.0.1:9", summary_model={"base_url": "http://x"})


def test_the_cli_shows_side_calls_apart(tmp_path: Path) -> None:
    import subprocess
    import sys

    from shared_helpers import cli_env

    with FakeModelServer(handler=ByModel()) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "q", "--model", "main-m", "--base-url",
             server.base_url, "--rubric", "be right"], cwd=tmp_path,
            env=cli_env(tmp_path, LOOPWRIGHT_API_KEY="k"), capture_output=True, text=True,
            timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "final answer"
    line = next(x for x in done.stderr.splitlines() if x.startswith("side calls:"))
    assert line.startswith("side calls: grading 1× main-m ") and " in " in line


@pytest.mark.parametrize(("spec", "message"), [
    ({"provider": "nosuch", "model": "x"}, r"memory_model: unknown key 'provider'"),
    ({"model": "x", "fallbacks": ["y"]},
     r"memory_model: unknown key .fallbacks.*memory_fallbacks"),
    ({"model": "x", "base_url": 5}, r"memory_model: 'base_url' must be text"),
    ({"model": "x", "api_mode": "grpc"}, r"unknown api_mode 'grpc'"),
])
def test_a_side_model_table_with_an_unknown_key_or_bad_value_fails_in_one_line(
        spec: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        Agent("m", base_url="http://127.0.0.1:9", memory_model=spec)
    assert "\n" not in str(caught.value)
