"""Resuming: a batch killed with SIGKILL loses only the tasks in flight, and `--resume` runs
exactly those."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from batch_support import TaskScript, read_jsonl, write_tasks

from loopwright.batch.results import read_rows
from loopwright.testing import FakeModelServer


def start_batch(server: FakeModelServer, tasks: Path, out: Path, *extra: str
                ) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("LOOPWRIGHT_") and not key.endswith("_API_KEY")}
    scratch = out.parent / "tmp"  # the workspaces a killed batch leaves behind stay in here
    scratch.mkdir(exist_ok=True)
    env["TMPDIR"] = str(scratch)
    return subprocess.Popen(
        [sys.executable, "-m", "loopwright", "batch", str(tasks), "--out", str(out),
         "--model", "fake-model", "--base-url", server.base_url, "--api-key", "test",
         "--concurrency", "4", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition: object, what: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, f"the batch ended early: {process.communicate()}"
        assert time.monotonic() < deadline, f"gave up waiting until {what}"
        time.sleep(0.02)


def test_kill_9_loses_only_the_tasks_in_flight(model_server: FakeModelServer,
                                                script: TaskScript, tmp_path: Path) -> None:
    fast = [{"id": f"fast-{n}", "prompt": f"say done {n}"} for n in range(6)]
    held = [{"id": f"held-{n}", "prompt": f"wait say late {n}"} for n in range(2)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", held[0], *fast[:3], held[1], *fast[3:])
    out = tmp_path / "out"
    process = start_batch(model_server, tasks, out, "--trajectories", "messages")
    results = out / "results.jsonl"

    def fast_ones_recorded() -> bool:
        return results.exists() and len(read_rows(results)) == 6 and script.waiting == 2

    wait_for(fast_ones_recorded, "the six fast tasks are recorded", process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    before = read_jsonl(results)
    assert sorted(row["id"] for row in before) == sorted(t["id"] for t in fast)

    script.release.set()
    requests_before = len(model_server.model_requests)
    resumed = start_batch(model_server, tasks, out, "--resume", "--trajectories", "messages")
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    rows = read_jsonl(results)
    assert rows[:6] == before  # the finished lines are kept as they were
    assert sorted(row["id"] for row in rows[6:]) == ["held-0", "held-1"]
    assert {row["output"] for row in rows[6:]} == {"late 0", "late 1"}
    assert len(model_server.model_requests) - requests_before == 2  # nothing ran twice
    trajectories = read_jsonl(out / "trajectories.jsonl")
    assert sorted(t["id"] for t in trajectories) == sorted(t["id"] for t in fast + held)
    assert "solved" in stdout and "8/8" in stdout


def test_a_line_cut_by_a_crash_is_dropped_on_resume(model_server: FakeModelServer,
                                                    tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "a", "prompt": "say one"},
                        {"id": "b", "prompt": "say two"})
    out = tmp_path / "out"
    out.mkdir()
    finished = '{"id": "a", "line": 1, "status": "done", "solved": true, "output": "one"}\n'
    (out / "results.jsonl").write_text(finished + '{"id": "b", "line": 2, "sta')
    process = start_batch(model_server, tasks, out, "--resume")
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    rows = read_jsonl(out / "results.jsonl")  # every line parses: the cut one is gone
    assert [row["id"] for row in rows] == ["a", "b"]
    assert [r.body["messages"][-1]["content"] for r in model_server.model_requests] == ["say two"]


def test_retry_failed_runs_failed_tasks_again(model_server: FakeModelServer,
                                              tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "a", "prompt": "say one"},
                        {"id": "b", "prompt": "say two"})
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text(
        '{"id": "a", "line": 1, "status": "done", "solved": true}\n'
        '{"id": "b", "line": 2, "status": "failed", "error": "provider down"}\n')
    plain = start_batch(model_server, tasks, out, "--resume")
    assert plain.communicate(timeout=120) and plain.returncode == 0
    assert model_server.model_requests == []  # a failed task is finished too
    again = start_batch(model_server, tasks, out, "--resume", "--retry-failed")
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    assert read_jsonl(out / "results.jsonl")[-1]["output"] == "two"
    assert "2/2" in stdout  # the summary counts the newest row of b
