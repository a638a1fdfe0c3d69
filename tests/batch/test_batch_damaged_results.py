"""`--resume` over a `results.jsonl` damaged as a disk, a crash or a hostile user could: each
field of a finished task's line of another type, a key taken out or added, a line that is not
an object, not JSON or not UTF-8; the file a directory, a pipe or a link to /dev/zero.

A damaged line is never trusted: its task runs again, and the batch says so in one warning.
A results file that is no file is a `ConfigError` saying what to do — never a raw exception,
a hang, or rows written where they vanish. Seeded: the damages are drawn by `random.Random`.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from batch_support import write_tasks

from loopwright.batch import run_batch
from loopwright.batch.results import DamagedResultsWarning
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer

SEED = 17
# the line `done` leaves for task a, as loopwright writes it
DONE = {"id": "a", "line": 1, "status": "done", "solved": True, "stop_reason": "end_turn",
        "verdict": {"passed": None, "checker": None, "detail": ""}, "turns": 1,
        "usage": {"input_tokens": 10, "output_tokens": 2}, "tokens": 12, "cost": None,
        "wall": 0.1, "session_id": "s-a", "error": None, "output": "one"}
TASKS = [{"id": "a", "prompt": "say one"}, {"id": "b", "prompt": "say two"}]


def other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "false" if value else "true"
    if isinstance(value, str):
        return ["a"]
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return []
    return [value]


def damaged_lines() -> list[tuple[str, bytes]]:
    cases = [(f"{key} of another type", {**DONE, key: other_type(value)})
             for key, value in DONE.items()]
    cases += [(f"no {key}", {k: v for k, v in DONE.items() if k != key})
              for key in ("id", "line", "status")]
    cases.append(("a key loopwright never writes", {**DONE, "trusted": True}))
    lines = [(what, json.dumps(line).encode()) for what, line in cases]
    return [*lines, ("a list", b"[1, 2]"), ("a string", b'"done"'), ("null", b"null"),
            ("not UTF-8", b'{"id": "a", "line": 1, "status": "d\xffne"}'),
            ("not JSON", b"{id: a}"), ("nested past the parser's depth", b"[" * 100_000)]


def server_options(server: FakeModelServer) -> dict[str, str]:
    return {"model": "fake-model", "base_url": server.base_url, "api_key": "test"}


async def test_a_damaged_line_is_never_trusted_and_its_task_runs_again(
        model_server: FakeModelServer, tmp_path: Path) -> None:
    failures = []
    for n, (what, line) in enumerate(damaged_lines()):
        out = tmp_path / str(n)
        out.mkdir()
        (out / "results.jsonl").write_bytes(line + b"\n")
        asked = len(model_server.model_requests)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                report = await run_batch(TASKS, out, resume=True, progress=False,
                                         **server_options(model_server))
        except Exception as exc:  # what the test looks for
            failures.append(f"{what}: {type(exc).__name__}: {exc}"[:300])
            continue
        prompts = sorted(r.body["messages"][-1]["content"]
                         for r in model_server.model_requests[asked:])
        said = [str(w.message) for w in caught if w.category is DamagedResultsWarning]
        if prompts != ["say one", "say two"]:
            failures.append(f"{what}: the model was asked {prompts}")
        if len(said) != 1 or "line 1" not in said[0]:
            failures.append(f"{what}: warned {said}")
        if sorted((row.id, row.output) for row in report.rows) != [("a", "one"), ("b", "two")]:
            failures.append(f"{what}: rows {report.rows}")
    assert not failures, "\n".join(failures)


async def test_a_good_line_is_kept_without_a_warning(model_server: FakeModelServer,
                                                     tmp_path: Path) -> None:
    """The rule must not fire on what loopwright writes (optional keys left out too)."""
    out = tmp_path / "out"
    out.mkdir()
    short = {"id": "b", "line": 2, "status": "failed", "error": "provider down"}
    (out / "results.jsonl").write_text(f"{json.dumps(DONE)}\n{json.dumps(short)}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedResultsWarning)
        report = await run_batch(TASKS, out, resume=True, progress=False,
                                 **server_options(model_server))
    assert model_server.model_requests == []
    assert sorted(row.status for row in report.rows) == ["done", "failed"]


@pytest.mark.parametrize("kind", ["a directory", "a pipe", "a link to /dev/zero"])
@pytest.mark.parametrize("name", ["results.jsonl", "trajectories.jsonl"])
async def test_a_results_file_that_is_no_file_is_refused(model_server: FakeModelServer,
                                                         tmp_path: Path, kind: str,
                                                         name: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / name
    if kind == "a directory":
        (target / "inside").mkdir(parents=True)
    elif kind == "a pipe":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="is not a file"):
        await run_batch(TASKS, out, resume=True, progress=False, trajectories="messages",
                        **server_options(model_server))
    assert model_server.model_requests == []


def test_the_cli_names_the_damaged_lines_on_one_line(model_server: FakeModelServer,
                                                     tmp_path: Path) -> None:
    rng = random.Random(SEED)
    tasks = write_tasks(tmp_path / "tasks.jsonl", *TASKS)
    out = tmp_path / "out"
    out.mkdir()
    lines = [line for _, line in rng.sample(damaged_lines(), 3)]
    (out / "results.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LOOPWRIGHT_") and not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, "-m", "loopwright", "batch", str(tasks), "--out", str(out),
         "--model", "fake-model", "--base-url", model_server.base_url, "--api-key", "test",
         "--resume"], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    said = [line for line in done.stderr.splitlines() if "damaged line" in line]
    assert len(said) == 1 and "line 1, 2, 3" in said[0], done.stderr
