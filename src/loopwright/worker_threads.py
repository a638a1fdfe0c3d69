"""Blocking work off the event loop's thread: plain `def` tools and a run's system prompt (on a
pool of threads) and the SQLite store (on a thread of its own, `store/threaded.py`, which feeds
`serve` its own queue).

`asyncio.to_thread` costs about 0.06 M instructions a call more than this module (callgrind,
docs/benchmarks.md; waking the loop, which any off-loop call needs, is the rest of a hop's
0.13 M): a `concurrent.futures.Future`
(a `Condition` each), the executor's idle semaphore on submit and on finish, and the two
futures chained by callbacks. A tool call needs less: a job on a queue, the result handed back
with one `call_soon_threadsafe`. What stays as `to_thread` had it: the caller's contextvars are
copied into the call (a tool may read them, as serve's approvals do); a call the awaiting task
gave up on (cancelled) before a thread took it never starts, and one already running is not
waited for — the thread finishes it and the result is dropped. Threads are made as calls need
them, up to `MAX_THREADS` (as many as the default executor's), and stay for the next call;
they are daemon threads, so a tool stuck forever does not keep the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

MAX_THREADS = 32


class Job:
    """A call to run off the loop: the function, the caller's contextvars, where the result goes."""

    __slots__ = ("abandoned", "context", "function", "future", "loop")

    def __init__(self, function: Callable[[], Any], loop: asyncio.AbstractEventLoop,
                 future: asyncio.Future[Any]) -> None:
        self.function = function
        self.context = contextvars.copy_context()
        self.loop = loop
        self.future = future
        self.abandoned = False


_jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
_lock = threading.Lock()
_threads = 0
_idle = 0


def run_in_thread(function: Callable[[], Any]) -> Coroutine[Any, Any, Any]:
    """`function()` on a worker thread, with the caller's contextvars: to await, for its result
    or error. (A plain function: no coroutine of its own around `run_job`'s, a frame fewer to
    make and to pass the wake-up through on every call.)"""
    return run_job(_submit, function)


async def run_job(submit: Callable[[Job], None], function: Callable[[], Any]) -> Any:
    """`function()` as a `Job` handed to `submit` (a queue some thread serves, as `serve`
    does); its result or error once that thread has run it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    job = Job(function, loop, future)
    submit(job)
    try:
        return await future
    except asyncio.CancelledError:
        job.abandoned = True  # not started yet: it never will be
        raise


def _submit(job: Job) -> None:
    global _threads, _idle
    with _lock:
        start = _idle == 0 and _threads < MAX_THREADS
        if start:
            _threads += 1
        elif _idle:
            _idle -= 1
    _jobs.put(job)
    if start:
        threading.Thread(target=_work, name="loopwright-tool", daemon=True).start()


def _forget_threads() -> None:
    """A forked child has none of its parent's threads: counted as idle, they would take no job
    and the child's first `def` tool would wait for ever."""
    global _jobs, _lock, _threads, _idle
    _jobs, _lock, _threads, _idle = queue.SimpleQueue(), threading.Lock(), 0, 0


os.register_at_fork(after_in_child=_forget_threads)


def _work() -> None:
    global _idle
    while True:
        job = _jobs.get()
        outcome = None if job.abandoned else _outcome(job)
        # idle before the hand-back, not after: the hand-back wakes the loop's thread, which
        # then waited for this one to take the interpreter's lock again for its bookkeeping
        # (a context switch more per call, ~10 % of a hop's CPU pinned to one core)
        with _lock:
            _idle += 1
        if outcome is not None:
            _hand_back(job, *outcome)
        del job, outcome


class JobSource(Protocol):
    """Where a thread of one's own takes its jobs from, in order (a None: stop)."""

    def get(self) -> Job | None: ...


def serve(jobs: JobSource) -> None:
    """A thread of one's own: run the jobs of `jobs` in order until a None (the session
    store's thread, store/threaded.py, where calls must keep their order)."""
    while (job := jobs.get()) is not None:
        if not job.abandoned:
            _hand_back(job, *_outcome(job))
        del job


def _outcome(job: Job) -> tuple[Callable[[asyncio.Future[Any], Any], None], Any]:
    """How the job's future is to be settled, and with what."""
    try:
        return _succeed, job.context.run(job.function)
    except BaseException as exc:  # handed to the awaiting task, as to_thread does
        return _fail, exc


def _hand_back(job: Job, settle: Callable[[asyncio.Future[Any], Any], None],
               value: Any) -> None:
    try:  # (not contextlib.suppress: a context manager's frames on every call)
        job.loop.call_soon_threadsafe(settle, job.future, value)
    except RuntimeError:  # the loop closed meanwhile: nobody waits
        return


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
