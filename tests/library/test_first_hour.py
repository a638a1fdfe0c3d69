"""A library user's first typed program (`first_hour.py`) runs, and type-checks under
`mypy --strict` against the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from loopwright.testing import FakeModelServer, Reply, call

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
EXAMPLES = HERE.parents[1] / "examples"


def test_the_first_typed_program_runs(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[call("geocode", {"address": {"street": "rue", "city": "Lyon"}}),
                          call("search", {"filters": [{"field": "city", "value": 1}]})]),
        Reply('{"text": "Lyon", "confidence": 0.9}'),
        Reply("Paris"), Reply("It is Lyon."),  # the user's check sends the first answer back
        Reply("The Rhône, in Lyon"),
        Reply(tool_calls=[call("geocode", {"address": {"street": "rue", "city": "Lyon"}})]),
        Reply("45.76, 4.83"),
    ]
    with FakeModelServer(script) as server:
        done = subprocess.run([sys.executable, str(HERE / "first_hour.py"), server.base_url],
                              cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)},
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Lyon 0.9 completed", "ParisIt is Lyon.", "The Rhône, in Lyon",
        'tool: {"lat": 45.76, "lon": 4.83}', "45.76, 4.83", "45.76"]
    filters = server.model_requests[1].body["messages"][-1]["content"]
    assert filters == "db: 1 filter(s), at most 10"


def test_the_first_typed_program_and_the_examples_pass_mypy_strict(tmp_path: Path) -> None:
    """`Agent.stream()` was typed `AsyncIterator`, so `contextlib.aclosing(agent.stream(…))`
    — what its docstring recommends — was a type error under `mypy --strict`; so was the review
    check of docs/settings.md (now examples/review_check.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         str(HERE / "first_hour.py"), *map(str, sorted(EXAMPLES.glob("*.py")))],
        env={**os.environ, "MYPYPATH": str(SRC)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
