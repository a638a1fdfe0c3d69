"""What a library user writes against loopwright's public types passes `mypy --strict`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")  # shared: the second check reuses the first's


def mypy_strict(user_code: str, where: Path, cache: Path) -> str:
    """mypy's complaints about `user_code` ("" when there are none)."""
    program = where / "user_program.py"
    program.write_text(textwrap.dedent(user_code), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(program)],
        env={**os.environ, "MYPYPATH": str(SRC)}, capture_output=True, text=True, timeout=600)
    return "" if done.returncode == 0 else done.stdout + done.stderr


def test_a_failed_runs_result_is_typed_as_the_runs_result(tmp_path: Path,
                                                          mypy_cache: Path) -> None:
    """`RunFailed.result` was typed `object`: reading `.stop_reason` off it was an error."""
    assert mypy_strict('''
        from loopwright import Agent
        from loopwright.errors import RunFailed


        async def answer(agent: Agent) -> str:
            try:
                return (await agent.run("hi")).output
            except RunFailed as failed:
                reason: str = failed.result.stop_reason
                return f"failed: {reason}, {failed.result.usage.requests} request(s)"
        ''', tmp_path, mypy_cache) == ""


def test_an_agent_made_from_a_served_local_models_options_type_checks(
        tmp_path: Path, mypy_cache: Path) -> None:
    """`ServedModel.agent_options()` returned `dict[str, object]`, so
    `Agent(**served.agent_options())` was an error under `mypy --strict` on every keyword."""
    assert mypy_strict('''
        from loopwright import Agent
        from loopwright.local import local_model


        def ask(question: str) -> str:
            with local_model() as served:
                agent = Agent(**served.agent_options(), tools=[])
                return agent.chat(question)
        ''', tmp_path, mypy_cache) == ""
