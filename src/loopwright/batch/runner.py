"""`run_batch`: many tasks, bounded concurrency, one event loop (or a Ray cluster), results
appended as they finish, resumable."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.batch.execute import BatchConfig, TaskOutcome, TaskRunner, check_tools
from loopwright.batch.progress import BatchProgress
from loopwright.batch.results import (
    RESULTS_FILE,
    JsonlAppender,
    JsonlWriter,
    ResultRow,
    failed_row,
    keep_lines,
    latest_rows,
    open_results,
)
from loopwright.batch.summary import BatchSummary, summarize
from loopwright.batch.tasks import BadLine, TaskSpec, read_tasks, tasks_from_dicts
from loopwright.batch.trajectories import INTERVENTIONS, TRAJECTORIES_FILE, TRAJECTORY_FORMATS
from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from loopwright.batch.ray_driver import RayCluster

SUMMARY_FILE = "summary.json"
DEFAULT_CONCURRENCY = 16

RunTask = Callable[[TaskSpec], Awaitable[TaskOutcome]]


@dataclass(kw_only=True)
class BatchReport:
    """What `run_batch` returns: the summary and the latest row of every task."""

    summary: BatchSummary
    rows: list[ResultRow]
    out: Path


class BatchSink:
    """Where finished tasks go: `results.jsonl`, `trajectories.jsonl`, the progress bar."""

    def __init__(self, writer: JsonlWriter, results: JsonlAppender,
                 trajectories: JsonlAppender | None, progress: BatchProgress) -> None:
        self.writer = writer
        self.results = results
        self.trajectories = trajectories
        self.progress = progress
        self.rows: list[ResultRow] = []

    def started(self, task: TaskSpec) -> None:
        self.progress.started()

    def requeued(self) -> None:
        """A started task goes back to the queue (its Ray worker died)."""
        self.progress.requeued()

    async def finished(self, outcome: TaskOutcome, *, was_running: bool = True) -> None:
        # the trajectory first: a task whose result line is written is complete on disk
        if self.trajectories is not None and outcome.trajectory is not None:
            self.trajectories.append(outcome.trajectory)
        self.results.append(outcome.row.to_dict())
        self.rows.append(outcome.row)
        self.progress.finished(outcome.row, was_running=was_running)

    async def aclose(self) -> None:
        """Every line written, the files closed (off the event loop: it waits for the disk)."""
        await self.writer.aclose()


async def run_batch(
    tasks: str | Path | Iterable[Mapping[str, Any]],
    out: str | Path,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    resume: bool = False,
    retry_failed: bool = False,
    trajectories: str | None = None,
    interventions: str = "mark",
    checker: str | None = None,
    tools: Iterable[Any] | None = None,
    workspaces: str | Path | None = None,
    progress: bool = False,
    console: Console | None = None,
    ray: str | None = None,
    ray_workers: int | None = None,
    **agent_options: Any,
) -> BatchReport:
    """Run every task of `tasks` (a JSONL file, or task dicts) and write `out/results.jsonl`.

    `concurrency` runs at once (on each worker, with `ray`); `resume` skips tasks already in
    `results.jsonl` (`retry_failed`: except failed ones); `trajectories` writes
    `out/trajectories.jsonl` in that format, the runtime's interventions (its notes, the
    replies it set aside) marked or, with `interventions="drop"`, left out; `checker` is the
    default checker; `tools` the default toolset (Tool objects, functions or built-in names;
    default: none); `workspaces` a directory in which to make and keep the task workspaces
    (default: a temporary one, each workspace removed when its task ends); `ray` runs
    the tasks on a Ray cluster ("auto", an address, or "local" for a new one in this process;
    see `loopwright.batch.ray_driver`) with `ray_workers` workers (default: one per node).
    Other keyword arguments go to every task's `Agent`. Raises `ConfigError` before any model
    call for an unknown checker, tool or trajectory format, or a configuration that cannot
    resolve a model.
    """
    _check_options(concurrency, interventions, trajectories)
    out = Path(out)
    loaded = await _load(tasks)
    specs = [task for task in loaded if isinstance(task, TaskSpec)]
    config = BatchConfig(agent_options=agent_options,
                         tools=None if tools is None else list(tools),
                         default_checker=checker, trajectories=trajectories,
                         interventions=interventions,
                         workspace_root=Path(workspaces).resolve() if workspaces else None)
    check_tools(specs, config)
    runner = TaskRunner(config, specs)  # unknown checkers fail here, before anything runs
    previous = await asyncio.to_thread(open_results, out / RESULTS_FILE, resume=resume)
    skip = {row.resume_key() for row in previous
            if row.status == "done" or (row.status == "failed" and not retry_failed)}
    pending = [task for task in specs if task.id not in skip]
    bad = [task for task in loaded if isinstance(task, BadLine)
           and _bad_key(task) not in {(r.line, r.error) for r in previous}]
    started = time.monotonic()
    cluster = None if ray is None else await _connect_ray(ray)
    try:
        await runner.prepare({task.model for task in pending})
        sink = await _open_sink(out, trajectories, skip, len(pending) + len(bad),
                                progress=progress, console=console)
        with sink.progress:
            for line in bad:
                await sink.finished(TaskOutcome(row=failed_row(
                    id=line.id, line=line.line, error=line.error, invalid=True)),
                    was_running=False)
            try:
                if cluster is None:
                    await run_local(pending, runner.run, sink, concurrency=concurrency)
                else:
                    await cluster.run(pending, config, sink, concurrency=concurrency,
                                      workers=ray_workers)
            finally:
                await sink.aclose()
    finally:
        await runner.aclose()
        if cluster is not None:
            await cluster.close()
    rows = latest_rows([*previous, *sink.rows])
    summary = summarize(rows, elapsed=time.monotonic() - started, ran=len(sink.rows) - len(bad))
    await asyncio.to_thread(_write_json, out / SUMMARY_FILE, summary.to_dict())
    return BatchReport(summary=summary, rows=rows, out=out)


def _check_options(concurrency: int, interventions: str, trajectories: str | None) -> None:
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    if interventions not in INTERVENTIONS:
        raise ConfigError(f"interventions must be 'mark' or 'drop', not {interventions!r}")
    if trajectories is not None and trajectories not in TRAJECTORY_FORMATS:
        raise ConfigError(f"unknown trajectory format {trajectories!r}; use one of "
                          f"{', '.join(TRAJECTORY_FORMATS)}")


async def run_local(tasks: list[TaskSpec], run_task: RunTask, sink: BatchSink, *,
                    concurrency: int) -> None:
    """At most `concurrency` tasks at once on this event loop; each result is recorded the
    moment its task ends."""
    queue = iter(tasks)

    async def worker() -> None:
        for task in queue:  # one shared iterator: each worker takes the next task
            sink.started(task)
            await sink.finished(await run_task(task))

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(tasks))):
            group.create_task(worker())


async def _connect_ray(address: str) -> RayCluster:
    from loopwright.batch.ray_driver import RayCluster

    return await RayCluster.connect(address)


async def _load(tasks: str | Path | Iterable[Mapping[str, Any]]) -> list[TaskSpec | BadLine]:
    if isinstance(tasks, str | Path):
        path = Path(tasks)
        try:
            return await asyncio.to_thread(read_tasks, path)
        except OSError as exc:
            raise ConfigError(f"cannot read the tasks file {path}: {exc.strerror or exc}"
                              ) from exc
    return await asyncio.to_thread(tasks_from_dicts, list(tasks))


async def _open_sink(out: Path, trajectories: str | None, skip: set[str], total: int, *,
                     progress: bool, console: Console | None) -> BatchSink:
    if trajectories is not None:
        await asyncio.to_thread(keep_lines, out / TRAJECTORIES_FILE, skip)
    writer = JsonlWriter()
    try:
        trajectory_file = None if trajectories is None else await asyncio.to_thread(
            writer.open, out / TRAJECTORIES_FILE)
        results = await asyncio.to_thread(writer.open, out / RESULTS_FILE)
    except BaseException:
        await writer.aclose()  # its thread ends
        raise
    return BatchSink(writer, results, trajectory_file,
                     BatchProgress(total, console=console, enabled=progress))


def _bad_key(line: BadLine) -> tuple[int, str]:
    return (line.line, line.error)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
