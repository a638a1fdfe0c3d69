"""After a kill: the workspaces of the tasks in flight are removed on `--resume` and at the next
start of any batch; a live batch's workspaces are left alone. Usage counts every request made,
failed ones included."""

from __future__ import annotations

import signal
from pathlib import Path

from batch_support import TaskScript, read_jsonl, write_tasks
from test_batch_resume import start_batch, wait_for

from loopwright.batch import run_batch
from loopwright.testing import FakeModelServer, Fault, Reply


def leftovers(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("loopwright-batch-*"))


def killed_in_flight(model_server: FakeModelServer, script: TaskScript, tmp_path: Path
                     ) -> Path:
    """A batch killed with two tasks in flight; returns its tasks file."""
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "fast", "prompt": "say done"},
                        *({"id": f"held-{n}", "prompt": f"wait say late {n}"} for n in range(2)))
    process = start_batch(model_server, tasks, tmp_path / "out")
    wait_for(lambda: script.waiting == 2, "two tasks are in flight", process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert [p.name for p in leftovers(tmp_path)] != []  # what the kill left behind
    return tasks


def test_resume_removes_the_workspaces_a_killed_batch_left(model_server: FakeModelServer,
                                                           script: TaskScript,
                                                           tmp_path: Path) -> None:
    tasks = killed_in_flight(model_server, script, tmp_path)
    script.release.set()
    resumed = start_batch(model_server, tasks, tmp_path / "out", "--resume")
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert leftovers(tmp_path) == []


def test_the_next_batch_removes_them_and_leaves_a_live_batchs_alone(
        model_server: FakeModelServer, script: TaskScript, tmp_path: Path) -> None:
    killed_in_flight(model_server, script, tmp_path)
    dead = leftovers(tmp_path)
    live_tasks = write_tasks(tmp_path / "live.jsonl", {"id": "held", "prompt": "wait say late"})
    live = start_batch(model_server, live_tasks, tmp_path / "live-out")
    try:
        wait_for(lambda: script.waiting == 3, "the live batch's task is in flight", live)
        [live_root] = [path for path in leftovers(tmp_path) if path not in dead]
        assert not any(path.exists() for path in dead)  # the killed batch's: removed
        other = write_tasks(tmp_path / "other.jsonl", {"id": "x", "prompt": "say other"})
        next_batch = start_batch(model_server, other, tmp_path / "other-out")
        _, stderr = next_batch.communicate(timeout=120)
        assert next_batch.returncode == 0, stderr
        assert leftovers(tmp_path) == [live_root] and live.poll() is None  # left alone
    finally:
        script.release.set()
        live.communicate(timeout=120)
    assert live.returncode == 0
    assert leftovers(tmp_path) == []


async def test_a_task_whose_only_request_got_a_400_counts_that_request(tmp_path: Path) -> None:
    with FakeModelServer([Fault.status(400, "bad request")]) as server:
        await run_batch([{"id": "a", "prompt": "say x"}], tmp_path / "out", model="fake-model",
                        base_url=server.base_url, api_key="test")
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["status"] == "failed"
    assert row["usage"]["requests"] == 1


async def test_retried_requests_are_counted_too(tmp_path: Path) -> None:
    from loopwright.endpoints.retry import RetryPolicy

    script = [Fault.status(503, "busy"), Reply("fine")]
    with FakeModelServer(script) as server:
        await run_batch([{"id": "a", "prompt": "say x"}], tmp_path / "out", model="fake-model",
                        base_url=server.base_url, api_key="test",
                        retry=RetryPolicy(base_delay=0.01, jitter=0))
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["status"] == "done" and row["usage"]["requests"] == 2

