"""After a kill: the workspaces of the tasks in flight are removed on `--resume` and at the next
start of any batch; a live batch's workspaces are left alone. Usage counts every request made,
failed ones included."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest
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



def dead_mark(path: Path) -> None:
    """Mark `path` as the workspaces of a batch whose process is gone (one that just ran)."""
    from loopwright.batch.workspace import OWNER_FILE
    from loopwright.store.lease import HOST

    ended = subprocess.Popen(["true"])
    ended.wait()
    (path / OWNER_FILE).write_text(f"{HOST} {ended.pid}", encoding="utf-8")


async def batch_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch run to the end with `tmp_path/tmp` as its temporary directory."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    with FakeModelServer([Reply("done")]) as server:
        await run_batch([{"id": "a", "prompt": "say done"}], tmp_path / "out",
                        model="fake-model", base_url=server.base_url, api_key="test")
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["status"] == "done"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory that is no batch's, marked as a dead batch's all the same."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "precious.txt").write_text("keep me")
    dead_mark(folder)
    (tmp_path / "tmp").mkdir()
    return folder


async def test_a_symlink_named_like_a_workspace_is_not_followed(
        tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tmp" / "loopwright-batch-link").symlink_to(victim)
    await batch_once(tmp_path, monkeypatch)
    assert (victim / "precious.txt").read_text() == "keep me"


async def test_a_symlink_inside_a_dead_batchs_workspace_is_not_followed(
        tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = tmp_path / "tmp" / "loopwright-batch-dead"
    (dead / "task-1").mkdir(parents=True)
    dead_mark(dead)
    (dead / "task-1" / "link").symlink_to(victim)
    await batch_once(tmp_path, monkeypatch)
    assert not dead.exists()  # where the rule must fire: a dead batch's, removed
    assert (victim / "precious.txt").read_text() == "keep me"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a directory to another user takes root")
async def test_another_users_directory_is_left_alone(
        tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = tmp_path / "tmp" / "loopwright-batch-theirs"
    theirs.mkdir()
    (theirs / "work.txt").write_text("theirs")
    dead_mark(theirs)
    for path in (theirs, theirs / "work.txt"):
        os.chown(path, 65534, 65534)  # nobody's
    await batch_once(tmp_path, monkeypatch)
    assert (theirs / "work.txt").read_text() == "theirs"


@pytest.mark.parametrize("mark", ["0", "-1", "1.5", "", "9" * 40])
async def test_a_directory_marked_with_no_real_pid_is_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mark: str) -> None:
    from loopwright.batch.workspace import OWNER_FILE
    from loopwright.store.lease import HOST

    odd = tmp_path / "tmp" / "loopwright-batch-odd"
    odd.mkdir(parents=True)
    (odd / OWNER_FILE).write_text(f"{HOST} {mark}", encoding="utf-8")
    await batch_once(tmp_path, monkeypatch)
    assert odd.exists()


async def test_an_owner_mark_that_is_a_pipe_does_not_hang_the_next_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopwright.batch.workspace import OWNER_FILE

    odd = tmp_path / "tmp" / "loopwright-batch-pipe"
    odd.mkdir(parents=True)
    os.mkfifo(odd / OWNER_FILE)  # reading it would wait for a writer for ever
    await asyncio.wait_for(batch_once(tmp_path, monkeypatch), 60)
    assert odd.exists()
