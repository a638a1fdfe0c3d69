"""`loopwright.batch.run_batch`: the Python API — concurrency bound, progress, tools, summary."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from batch_support import TaskScript, read_jsonl
from rich.console import Console

from loopwright import ToolContext, tool
from loopwright.batch import run_batch
from loopwright.batch.summary import percentile
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call


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


AGENTS_SEEN: list[tuple[int, str]] = []


@tool
def where(ctx: ToolContext) -> str:
    """Say which agent runs this call, and in which directory."""
    AGENTS_SEEN.append((id(ctx.services["agent"]), str(ctx.workdir)))
    return str(ctx.workdir)


async def test_tasks_of_one_shape_share_one_agent_each_in_its_own_workspace(
        tmp_path: Path) -> None:
    """Issue 31: a new Agent per task cost about as much CPU as the task's run itself."""
    AGENTS_SEEN.clear()

    def reply(request: RecordedRequest) -> Reply:
        answered = request.body["messages"][-1]["role"] == "tool"
        return Reply("done") if answered else Reply(tool_calls=[call("where", {})])

    with FakeModelServer(handler=reply) as server:
        tasks = [{"id": f"t{n}", "prompt": "where?", "files": {"mine.txt": str(n)}}
                 for n in range(3)]
        tasks.append({"id": "other", "prompt": "where?", "system_prompt": "Be brief."})
        tasks.append({"id": "skilled", "prompt": "where?",  # brings a skill: its own agent
                      "files": {".loopwright/skills/hello/SKILL.md": "---\nname: hello\n"
                                "description: Say hello.\n---\nSay hello."}})
        report = await run_batch(tasks, tmp_path / "out", tools=[where], concurrency=2,
                                 **server_options(server))
    assert report.summary.tasks == 5 and all(row.status == "done" for row in report.rows)
    agents = [agent for agent, _ in AGENTS_SEEN]
    workdirs = [workdir for _, workdir in AGENTS_SEEN]
    assert len(set(agents)) == 3  # the three alike, the other system prompt, the skilled one
    assert sorted(Path(w).name.split("-")[0] for w in workdirs) == ["other", "skilled", "t0",
                                                                     "t1", "t2"]


async def test_tasks_that_touch_no_files_share_one_read_only_directory(tmp_path: Path) -> None:
    """Issue 31: a directory made and removed on a worker thread for each task was a third of
    the batch's own CPU per task, also for tasks with no files, tools or file-reading checker.
    Those share one empty, read-only directory; every other task still gets its own."""
    workdirs: dict[str, str] = {}
    modes: dict[str, int] = {}

    def reply(request: RecordedRequest) -> Reply:
        text = json.dumps(request.body["messages"])  # where the prompt put it (window-dependent)
        where = text.split("- Working directory: ", 1)[1].split("\\n", 1)[0]
        prompt = re.findall(r"task:(\w+)", text)[0]
        workdirs[prompt] = where
        modes[prompt] = Path(where).stat().st_mode & 0o777
        if prompt == "write" and request.body["messages"][-1]["role"] != "tool":
            return Reply(tool_calls=[call("write_file", {"path": "out.txt", "content": "x"})])
        return Reply("x")

    plain = [{"id": f"p{n}", "prompt": f"task:plain{n}", "expected": "x"} for n in range(3)]
    others = [{"id": "files", "prompt": "task:files", "files": {"a.txt": "a"}},
              {"id": "checker", "prompt": "task:checker", "checker": "batch_checkers:shouts"},
              {"id": "write", "prompt": "task:write", "tools": ["write_file"],
               "checker": "batch_checkers:wrote_expected", "expected": "x"}]
    with FakeModelServer(handler=reply) as server:
        report = await run_batch([*plain, *others], tmp_path / "out", concurrency=3,
                                 **server_options(server))
    assert [row.status for row in report.rows] == ["done"] * 6
    assert [row.id for row in report.rows if not row.solved] == ["checker"]  # "x" is no shout
    shared = {workdirs[f"plain{n}"] for n in range(3)}
    assert len(shared) == 1
    own = [workdirs[name] for name in ("files", "checker", "write")]
    assert len(set(own)) == 3 and not shared & set(own)
    assert modes["plain0"] == 0o555 and modes["files"] & 0o200  # read-only; its own writable
    assert Path(shared.pop()).parent == Path(own[0]).parent  # under the batch's one root
    assert not Path(own[0]).parent.exists()  # removed with the batch
