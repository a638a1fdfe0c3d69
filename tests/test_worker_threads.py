"""Plain `def` tools on worker threads (worker_threads.py): off the event loop's thread, with the
caller's contextvars, errors handed back, and a cancelled caller never waiting for the thread."""

import asyncio
import contextvars
import threading

import pytest

from loopwright import ToolContext, tool
from loopwright import worker_threads as worker

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


async def test_a_plain_tool_sees_the_callers_contextvars_on_another_thread(tmp_path) -> None:
    @tool
    def where() -> str:
        """Report the thread and the request id."""
        return f"{threading.get_ident()} {REQUEST_ID.get()}"

    REQUEST_ID.set("r-7")
    thread, seen = (await where.invoke({}, ToolContext(workdir=tmp_path))).split()
    assert int(thread) != threading.get_ident()
    assert seen == "r-7"


async def test_a_tools_change_to_a_contextvar_stays_in_its_call(tmp_path) -> None:
    @tool
    def change() -> str:
        """Set the request id."""
        REQUEST_ID.set("changed")
        return REQUEST_ID.get()

    REQUEST_ID.set("mine")
    assert await change.invoke({}, ToolContext(workdir=tmp_path)) == "changed"
    assert REQUEST_ID.get() == "mine"


async def test_an_error_raised_on_the_thread_reaches_the_caller(tmp_path) -> None:
    @tool
    def broken() -> str:
        """Fail."""
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        await broken.invoke({}, ToolContext(workdir=tmp_path))


async def test_a_cancelled_caller_does_not_wait_for_a_stuck_thread() -> None:
    release, started = threading.Event(), threading.Event()

    def stuck() -> str:
        started.set()
        release.wait(30)
        return "late"

    task = asyncio.create_task(worker.run_in_thread(stuck))
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # returns while the thread still blocks
    assert not release.is_set()
    release.set()


async def test_a_call_abandoned_before_a_thread_took_it_never_runs() -> None:
    ran: list[str] = []
    loop = asyncio.get_running_loop()
    abandoned = worker.Job(lambda: ran.append("ran"), loop, loop.create_future())
    abandoned.abandoned = True  # what a cancelled caller marks
    worker._submit(abandoned)
    assert await worker.run_in_thread(lambda: "after") == "after"
    await asyncio.to_thread(lambda: None)  # every thread past its last job's check
    assert ran == []
    assert not abandoned.future.done()


def test_a_forked_child_runs_plain_tools_on_threads_of_its_own(tmp_path) -> None:
    """The parent's idle worker threads do not exist in a forked child (multiprocessing's
    default start method on Linux): counted as idle there, they took the child's first call
    and it waited for ever."""
    import multiprocessing
    import os

    @tool
    def pid() -> str:
        """Report the process id."""
        return str(os.getpid())

    async def call() -> str:
        return str(await pid.invoke({}, ToolContext(workdir=tmp_path)))

    assert asyncio.run(call()) == str(os.getpid())  # the parent now has an idle thread

    def child(results: "multiprocessing.Queue[str]") -> None:
        results.put(asyncio.run(asyncio.wait_for(call(), 30)))

    fork = multiprocessing.get_context("fork")
    results: multiprocessing.Queue[str] = fork.Queue()
    process = fork.Process(target=child, args=(results,))
    process.start()
    answer = results.get(timeout=60)
    process.join(60)
    assert answer == str(process.pid)


async def test_calls_one_after_another_reuse_one_thread(tmp_path, monkeypatch) -> None:
    """A thread counts itself idle before it hands its result back: the caller, woken by the
    hand-back, found it still busy and started a second thread for its next call (and the
    thread's bookkeeping after the hand-back cost a context switch a call). Before, this failed
    with the process on one core (`taskset -c 0`), where the woken caller runs first."""
    monkeypatch.setattr(worker, "_parked", [])  # no idle thread left by another test
    monkeypatch.setattr(worker, "_threads", 0)

    @tool
    def plain() -> str:
        """Answer at once."""
        return "done"

    for _ in range(50):
        assert await plain.invoke({}, ToolContext(workdir=tmp_path)) == "done"
        assert len(worker._parked) == 1  # the one thread, idle by the time its result arrived
    assert worker._threads == 1
