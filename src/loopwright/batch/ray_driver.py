"""The same batch on a Ray cluster (`--ray auto|ADDRESS`, `pip install 'loopwright[ray]'`).

The driver (this process) reads and checks the tasks, writes `results.jsonl`, the trajectories
and the progress bar exactly as a local batch does. The work goes to `BatchWorker` actors, one
per Ray node by default (`--ray-workers N`): each is one process with one event loop holding up to
`concurrency` runs at once through its own `TaskRunner` — not a process per task. Results
stream back as each task ends.

A worker that dies (its process killed, its node lost) fails the calls it was running; the driver
hands those tasks to the other workers, and Ray restarts the dead actor (`max_restarts`), which
takes work again once it answers a ping. Tasks are never lost and a finished one is never
re-run; a task in flight on a dead worker runs again from the start.

Workers need loopwright (and any `module:function` checker or tool) importable, and a task's
`workspace` directory at the same path on their node (a shared filesystem); `files` travel with
the task. Each worker makes its workspaces in a temporary directory of its node (or in
`--workspaces`, at that path on its node).
"""

from __future__ import annotations

import asyncio
import collections
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwright.batch.execute import BatchConfig, TaskOutcome, TaskRunner
from loopwright.batch.results import ResultRow, failed_row
from loopwright.batch.tasks import TaskSpec
from loopwright.errors import ConfigError, LoopwrightError

if TYPE_CHECKING:
    from loopwright.batch.runner import BatchSink

RAY_MISSING = "--ray needs Ray: pip install 'loopwright[ray]'"
ACTOR_RESTARTS = 3
CONNECT_TIMEOUT = 5.0


class BatchWorker:
    """A Ray actor: one event loop running many tasks of one batch."""

    def __init__(self, config: BatchConfig) -> None:
        self.runner = TaskRunner(config)

    async def ping(self) -> int:
        """The worker's process id, once it can take work."""
        return os.getpid()

    async def run(self, task: TaskSpec) -> tuple[dict[str, Any], dict[str, Any] | None]:
        outcome = await self.runner.run(task)
        return outcome.row.to_dict(), outcome.trajectory

    async def close(self) -> None:
        await self.runner.aclose()


@dataclass(eq=False)
class _Worker:
    handle: Any  # a Ray actor handle
    ready: asyncio.Future[Any]  # its last ping; the worker takes work once it has answered
    running: set[str] = field(default_factory=set)  # ids of its tasks in flight

    def usable(self) -> bool:
        return self.ready.done() and self.ready.exception() is None


class RayCluster:
    """The Ray cluster a batch runs on; `connect()` it before anything is written, so that a
    cluster that cannot be reached fails the batch at the start."""

    def __init__(self, ray: Any, *, started_here: bool) -> None:
        self.ray = ray
        self.started_here = started_here

    @classmethod
    async def connect(cls, address: str) -> RayCluster:
        """`auto`: the cluster this machine belongs to; `local`: a new one in this process;
        else a cluster address. A process that already called `ray.init` uses its own."""
        ray = _import_ray()
        if ray.is_initialized():
            return cls(ray, started_here=False)
        await asyncio.to_thread(_connect, ray, address)
        return cls(ray, started_here=True)

    async def run(self, tasks: list[TaskSpec], config: BatchConfig, sink: BatchSink, *,
                  concurrency: int, workers: int | None) -> None:
        """Run `tasks` on `workers` actors (default: one per live node), `concurrency` at once
        on each, recording each result through `sink`."""
        ray = self.ray
        count = workers or len([n for n in ray.nodes() if n.get("Alive")]) or 1
        actor = ray.remote(max_restarts=ACTOR_RESTARTS, max_task_retries=0)(BatchWorker)
        pool = [_start(actor.options(max_concurrency=concurrency, num_cpus=1,
                                     scheduling_strategy="SPREAD"), config)
                for _ in range(count)]
        try:
            await _Dispatcher(pool, sink, concurrency, ray).run(tasks)
        finally:
            await _stop(pool, ray)

    async def close(self) -> None:
        if self.started_here:
            await asyncio.to_thread(self.ray.shutdown)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    return ray


def _connect(ray: Any, address: str) -> None:
    """Blocking: join (or, for `local`, start) the cluster. An address that does not answer
    fails in seconds (Ray itself would retry for minutes)."""
    if address == "local":
        ray.init(include_dashboard=False, log_to_driver=False)
        return
    _check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address!r}: {exc}") from exc


def _check_reachable(address: str) -> None:
    """For a `host:port` (or `ray://host:port`) address: something listens there."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or address == "auto":
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address!r}: {exc.strerror or exc}; "
                          "start it with `ray start --head` or give its address") from exc


def _start(actor: Any, config: BatchConfig) -> _Worker:
    handle = actor.remote(config)
    return _Worker(handle=handle, ready=_future(handle.ping.remote()))


async def _stop(pool: list[_Worker], ray: Any) -> None:
    closing = [_future(worker.handle.close.remote()) for worker in pool]
    await asyncio.gather(*closing, return_exceptions=True)  # a dead worker has nothing to close
    for worker in pool:
        ray.kill(worker.handle)


def _future(ref: Any) -> asyncio.Future[Any]:
    return asyncio.wrap_future(ref.future())


class _Dispatcher:
    """Keeps every usable worker at `concurrency` tasks, records results, re-queues the tasks
    of a worker that died."""

    def __init__(self, pool: list[_Worker], sink: BatchSink, concurrency: int, ray: Any) -> None:
        self.pool = pool
        self.sink = sink
        self.concurrency = concurrency
        self.actor_died = ray.exceptions.RayActorError
        self.calls: dict[asyncio.Future[Any], tuple[TaskSpec, _Worker]] = {}

    async def run(self, tasks: list[TaskSpec]) -> None:
        queue = collections.deque(tasks)
        while queue or self.calls:
            self._fill(queue)
            waiting: set[asyncio.Future[Any]] = set(self.calls)
            waiting.update(w.ready for w in self.pool if not w.ready.done())
            if not waiting:
                raise LoopwrightError("no Ray worker is left to run the batch's tasks")
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for call in done:
                if call in self.calls:
                    await self._finished(call, queue)
            self._check_pings()

    def _fill(self, queue: collections.deque[TaskSpec]) -> None:
        while queue:
            usable = [w for w in self.pool if w.usable() and len(w.running) < self.concurrency]
            if not usable:
                return
            worker = min(usable, key=lambda w: len(w.running))
            task = queue.popleft()
            worker.running.add(task.id)
            self.calls[_future(worker.handle.run.remote(task))] = (task, worker)
            self.sink.started(task)

    async def _finished(self, call: asyncio.Future[Any], queue: collections.deque[TaskSpec]
                        ) -> None:
        task, worker = self.calls.pop(call)
        worker.running.discard(task.id)
        error = call.exception()
        if isinstance(error, self.actor_died):
            queue.appendleft(task)  # runs again on a live worker
            self.sink.requeued()
            if worker.ready.done():  # ping until Ray has restarted it (or given up on it)
                worker.ready = _future(worker.handle.ping.remote())
            return
        if error is not None:  # a bug in the worker, not a dead one: this task fails
            row = failed_row(id=task.id, line=task.line, error=f"{type(error).__name__}: {error}")
            await self.sink.finished(TaskOutcome(row=row))
            return
        row, trajectory = call.result()
        await self.sink.finished(TaskOutcome(row=ResultRow.from_dict(row), trajectory=trajectory))

    def _check_pings(self) -> None:
        """A worker whose restarts are used up answers its ping with an error: drop it."""
        for worker in list(self.pool):
            if worker.ready.done() and worker.ready.exception() is not None \
                    and not worker.running:
                self.pool.remove(worker)
