"""`loopwright.batch.run_batch`: the Python API — concurrency bound, progress, tools, summary."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from batch_support import TaskScript, read_jsonl
from rich.console import Console

from loopwright import tool
from loopwright.batch import run_batch
from loopwright.batch.summary import percentile
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer, Reply, call


def server_options(server: FakeModelServer) -> dict[str, str]:
    return {"model": "fake-model", "base_url": server.base_url, "api_key": "test"}


async def test_concurrency_is_bounded_and_every_task_runs(model_server: FakeModelServer,
                                                          script: TaskScript,
                                                          tmp_path: Path) -> None:
    script.release.set()  # "wait" replies answer at once, but overlap while in flight
    tasks = [{"id": n, "prompt": f"wait say {n}", "expected": str(n)} for n in range(40)]
    report = await run_batch(tasks, tmp_path / "out", concurrency=5,
                             **server_options(model_server))
    assert report.summary.tasks == 40 and report.summary.solved == 40
    assert 1 <= script.most_at_once <= 5
    assert sorted(int(row.id or -1) for row in report.rows) == list(range(40))


async def test_progress_bar_counts(model_server: FakeModelServer, tmp_path: Path) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200)
    tasks = [{"id": "a", "prompt": "say x", "expected": "x"},
             {"id": "b", "prompt": "say y", "expected": "x"}, {"prompt": "no id"}]
    await run_batch(tasks, tmp_path / "out", progress=True, console=console,
                    **server_options(model_server))
    final = buffer.getvalue().rsplit("\r", 1)[-1]
    assert "3/3" in final and "ETA" in final
    assert "solved 1 · failed 1 · running 0" in final and "tokens" in final


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


async def test_python_tools_by_object_and_name(tmp_path: Path) -> None:
    replies = [Reply(tool_calls=[call("multiply", {"a": 6, "b": 7})]), Reply("42")]
    with FakeModelServer(replies * 2) as server:
        tasks = [{"id": "object", "prompt": "6*7?", "expected": "42"},
                 {"id": "named", "prompt": "6*7?", "expected": "42",
                  "tools": ["test_batch_api:multiply"]}]
        report = await run_batch(tasks, tmp_path / "out", tools=[multiply], concurrency=1,
                                 **server_options(server))
        results = [r.body["messages"][-1] for r in server.model_requests if
                   r.body["messages"][-1]["role"] == "tool"]
    assert report.summary.solved == 2
    assert [message["content"] for message in results] == ["42", "42"]


async def test_a_broken_configuration_fails_at_start(model_server: FakeModelServer,
                                                     tmp_path: Path) -> None:
    options = {**server_options(model_server), "api_mode": "bogus"}
    with pytest.raises(ConfigError, match='api_mode = "bogus" is not valid'):
        await run_batch([{"id": "a", "prompt": "say x"}], tmp_path / "out", **options)
    assert not (tmp_path / "out" / "results.jsonl").exists()
    assert model_server.requests == []


async def test_a_provider_failure_is_a_failed_row(tmp_path: Path) -> None:
    from loopwright.testing import Fault

    with FakeModelServer([Fault.status(400, "bad request")]) as server:
        report = await run_batch([{"id": "a", "prompt": "say x"}], tmp_path / "out",
                                 **server_options(server))
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["status"] == "failed" and row["stop_reason"] == "error" and not row["solved"]
    assert "400" in row["error"]
    assert report.summary.failed == 1


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, p) for p in (50, 90, 99, 100)] == [50.0, 90.0, 99.0, 100.0]
    assert percentile([3.0], 50) == 3.0 and percentile([], 90) == 0.0
