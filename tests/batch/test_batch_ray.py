"""The same batch on a real local Ray cluster (one per module: Ray starts slowly), against the
fake model server: spread over two workers, the same output as a local run, and a worker
killed mid-batch whose tasks are run again by the others."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_support import TaskScript, read_jsonl, write_tasks
from typer.testing import CliRunner

from loopwright.batch import run_batch
from loopwright.cli.main import app
from loopwright.testing import FakeModelServer
from shared_helpers import live_processes, require_component, wait_until

WORKER_TITLE = "ray::BatchWorker"


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_component(importlib.util.find_spec("ray") is not None,
                      "Ray is not installed: pip install -e '.[dev,ray]'")
    import ray

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "disabled")  # no token written to the real home
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        # the workers start with this environment, not the per-test one: without a home of their
        # own, their runs would write into the real user's session store
        home = tmp_path_factory.mktemp("ray-home", numbered=False)
        patch.setenv("HOME", str(home))
        for name, sub in (("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache"),
                          ("XDG_CONFIG_HOME", ".config")):
            patch.setenv(name, str(home / sub))
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024**2,
                 log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def options(server: FakeModelServer) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "base_url": server.base_url, "api_key": "test"}


TASKS = [
    {"id": "say", "prompt": "say 42", "expected": "42"},
    {"id": "miss", "prompt": "say 41", "expected": "42"},
    {"id": "read", "prompt": "read n.txt", "files": {"n.txt": "port 8417"},
     "tools": ["read_file"], "expected": "8417", "checker": "contains"},
    {"id": "rubric", "prompt": "say good", "rubric": "Is it good?"},
]


async def test_same_output_as_a_local_run_spread_over_workers(
        ray_cluster: Any, model_server: FakeModelServer, script: TaskScript,
        tmp_path: Path) -> None:
    held = [{"id": f"held-{n}", "prompt": f"wait say {n}", "expected": str(n)} for n in range(6)]
    local = await run_batch(TASKS, tmp_path / "local", trajectories="openai",
                            **options(model_server))
    batch = asyncio.ensure_future(run_batch(
        TASKS + held, tmp_path / "ray", trajectories="openai", ray="auto", ray_workers=2,
        concurrency=3, **options(model_server)))
    # six runs held at once with three per worker: both workers hold runs
    await wait_until(lambda: script.waiting == 6, "both workers hold three runs each", 120)
    script.release.set()
    remote = await batch
    local_rows = {row["id"]: row for row in read_jsonl(tmp_path / "local" / "results.jsonl")}
    ray_rows = {row["id"]: row for row in read_jsonl(tmp_path / "ray" / "results.jsonl")}
    assert set(ray_rows) == {t["id"] for t in TASKS + held}
    for task_id, row in local_rows.items():
        other = ray_rows[task_id]
        assert other.keys() == row.keys()
        for key in ("status", "solved", "stop_reason", "verdict", "turns", "output", "line"):
            assert other[key] == row[key], (task_id, key)
    assert remote.summary.solved == local.summary.solved + 6
    local_paths = {t["id"]: t for t in read_jsonl(tmp_path / "local" / "trajectories.jsonl")}
    for trajectory in read_jsonl(tmp_path / "ray" / "trajectories.jsonl"):
        if trajectory["id"] in local_paths:
            mine = local_paths[trajectory["id"]]
            assert trajectory.keys() == mine.keys()
            assert [m["role"] for m in trajectory["messages"]] == \
                [m["role"] for m in mine["messages"]]
    await wait_until(lambda: live_processes(WORKER_TITLE) == [], "the batch's workers are gone",
                     60)


async def test_a_worker_killed_mid_batch(ray_cluster: Any, model_server: FakeModelServer,
                                         script: TaskScript, tmp_path: Path) -> None:
    held = [{"id": f"held-{n}", "prompt": f"wait say {n}", "expected": str(n)}
            for n in range(10)]
    quick = [{"id": f"quick-{n}", "prompt": f"say {n}", "expected": str(n)} for n in range(4)]
    batch = asyncio.ensure_future(run_batch(
        held + quick, tmp_path / "out", ray="auto", ray_workers=2, concurrency=3,
        **options(model_server)))
    await wait_until(lambda: script.waiting == 6, "both workers hold three runs each", 120)
    [victim, *_] = live_processes(WORKER_TITLE)
    os.kill(victim, signal.SIGKILL)
    script.release.set()
    report = await asyncio.wait_for(batch, 240)
    rows = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert sorted(row["id"] for row in rows) == sorted(t["id"] for t in held + quick)
    assert all(row["solved"] and row["status"] == "done" for row in rows), rows
    assert report.summary.solved == 14
    held_requests = [r for r in model_server.model_requests
                     if r.body["messages"][1]["content"].startswith("wait")]
    assert len(held_requests) == 10 + 3  # the victim's three runs ran again elsewhere


def test_cli_ray_flag(ray_cluster: Any, model_server: FakeModelServer, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", *TASKS)
    result = CliRunner().invoke(app, [
        "batch", str(tasks), "--out", str(tmp_path / "out"), "--ray", "auto",
        "--ray-workers", "1", "--model", "gpt-4o-mini", "--base-url", model_server.base_url,
        "--api-key", "test"])
    assert result.exit_code == 0, result.output
    assert "3/4" in result.stdout
    worker_store = tmp_path.parent / "ray-home" / ".local/share/loopwright/sessions.db"
    assert worker_store.exists()  # the workers' sessions went to the test's home, not the real one
    assert len(read_jsonl(tmp_path / "out" / "results.jsonl")) == 4


def test_an_unreachable_cluster_fails_at_the_start(model_server: FakeModelServer,
                                                   tmp_path: Path) -> None:
    require_component(importlib.util.find_spec("ray") is not None,
                      "Ray is not installed: pip install -e '.[dev,ray]'")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tasks = write_tasks(tmp_path / "tasks.jsonl", *TASKS)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    done = subprocess.run(
        [sys.executable, "-m", "loopwright", "batch", str(tasks), "--out", str(tmp_path / "out"),
         "--ray", f"127.0.0.1:{port}", "--model", "fake-model", "--base-url",
         model_server.base_url, "--api-key", "test"],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 6, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"loopwright: cannot reach the Ray cluster at '127.0.0.1:{port}': Connection refused; "
        "start it with `ray start --head` or give its address"]
    assert model_server.model_requests == []
    assert not (tmp_path / "out" / "results.jsonl").exists()
