"""Plain `def` tools on worker threads (worker_threads.py): off the event loop's thread, with the
caller's contextvars, errors handed back, and a cancelled caller never waiting for the thread."""

import asyncio
import contextvars
import subprocess
import sys
import textwrap
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
    monkeypatch.setattr(worker, "_waking", 0)

    @tool
    def plain() -> str:
        """Answer at once."""
        return "done"

    for _ in range(50):
        assert await plain.invoke({}, ToolContext(workdir=tmp_path)) == "done"
        assert len(worker._parked) == 1  # the one thread, idle by the time its result arrived
    assert worker._threads == 1


@pytest.fixture
def fresh_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """No idle thread left by another test, none counted."""
    monkeypatch.setattr(worker, "_parked", [])
    monkeypatch.setattr(worker, "_waiting", type(worker._waiting)())
    monkeypatch.setattr(worker, "_threads", 0)
    monkeypatch.setattr(worker, "_waking", 0)


async def test_the_next_call_goes_to_the_thread_idle_last(fresh_pool: None) -> None:
    """Two threads idle: the one that finished last (warm) takes the next call."""
    first_go, second_go = threading.Event(), threading.Event()
    started = [threading.Event(), threading.Event()]

    def blocked(go: threading.Event, n: int) -> int:
        started[n].set()
        go.wait(30)
        return threading.get_ident()

    first = asyncio.create_task(worker.run_in_thread(lambda: blocked(first_go, 0)))
    second = asyncio.create_task(worker.run_in_thread(lambda: blocked(second_go, 1)))
    for event in started:  # each on a thread of its own
        assert await asyncio.to_thread(event.wait, 30)
    first_go.set()
    first_thread = await first
    second_go.set()
    second_thread = await second
    assert first_thread != second_thread
    assert await worker.run_in_thread(threading.get_ident) == second_thread
    assert await worker.run_in_thread(threading.get_ident) == second_thread
    assert worker._threads == 2


async def test_with_every_thread_busy_a_call_waits_for_the_first_one_free(
        fresh_pool: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """At `MAX_THREADS` busy threads no thread more is made: the call waits in the shared queue
    and the first thread done with its job takes it; one abandoned meanwhile never runs."""
    monkeypatch.setattr(worker, "MAX_THREADS", 2)
    go, started = [threading.Event(), threading.Event()], [threading.Event(), threading.Event()]
    ran: list[str] = []

    def blocked(n: int) -> int:
        started[n].set()
        go[n].wait(30)
        return threading.get_ident()

    busy = [asyncio.create_task(worker.run_in_thread(lambda n=n: blocked(n))) for n in (0, 1)]
    for event in started:
        assert await asyncio.to_thread(event.wait, 30)
    abandoned = asyncio.create_task(worker.run_in_thread(lambda: ran.append("abandoned")))
    waiting = asyncio.create_task(worker.run_in_thread(threading.get_ident))
    await asyncio.sleep(0)
    assert len(worker._waiting) == 2 and worker._threads == 2
    abandoned.cancel()
    with pytest.raises(asyncio.CancelledError):
        await abandoned  # given up while it waited for a thread
    go[1].set()
    assert await waiting == await busy[1]  # the freed thread took it
    go[0].set()
    await busy[0]
    assert ran == []
    assert worker._threads == 2 and not worker._waiting


async def test_many_callers_on_many_threads_racing_lose_no_call(
        fresh_pool: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Event loops on three threads, each with many tasks, hop to a pool smaller than the
    tasks at once: threads parking, being handed calls and taking waiting ones race, and no
    call is left unanswered (a lost wake-up would hang a caller) or answered twice."""
    monkeypatch.setattr(worker, "MAX_THREADS", 4)

    async def caller(who: int, task: int) -> list[tuple[int, int, int]]:
        return [await worker.run_in_thread(lambda n=n: (who, task, n)) for n in range(150)]

    async def loop_of(who: int) -> list[list[tuple[int, int, int]]]:
        return await asyncio.wait_for(
            asyncio.gather(*(caller(who, task) for task in range(12))), 120)

    answers = await asyncio.gather(*(asyncio.to_thread(asyncio.run, loop_of(who))
                                     for who in range(3)))
    for who, tasks in enumerate(answers):
        for task, results in enumerate(tasks):
            assert results == [(who, task, n) for n in range(150)]
    assert worker._threads <= 4 and not worker._waiting
    # a thread woken for a call another thread took first parks again when it next runs: on a
    # loaded machine that can be after the last answer is in (so `_waking` is not 0 yet)
    for _ in range(1000):
        if not worker._waking:
            break
        await asyncio.sleep(0.01)
    assert len(worker._parked) == worker._threads


def test_a_hop_to_an_idle_thread_on_one_core_switches_twice_not_six_times() -> None:
    """On one core, a call woke a thread waiting on a shared `queue.SimpleQueue` while the
    loop's thread held the interpreter's lock: the woken thread found it taken and slept again,
    ~6 context switches a hop, 3 voluntary and 3 not (bench/pool_hops.py). A thread waiting on
    its own pipe is woken by an `os.write`, which lets go of the lock first: 2 a hop, the
    loop's thread sleeping once for the result and the worker once for its next job."""
    script = textwrap.dedent("""
        import asyncio, os, sys
        from loopwright.worker_threads import run_in_thread

        def switches():  # every thread's, voluntary and not
            total = 0
            for task in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{task}/status") as status:
                    for line in status:
                        if "ctxt_switches" in line:
                            total += int(line.split()[1])
            return total

        async def hops():
            for _ in range(100):  # the thread made, everything warm
                await run_in_thread(int)
            before = switches()
            for _ in range(2000):
                await run_in_thread(int)
            return (switches() - before) / 2000

        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
        print(asyncio.run(hops()))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    assert float(done.stdout) < 4  # 2 with a pipe each, ~5.9 on a shared queue


async def test_a_plain_calls_result_wakes_the_loop_without_its_self_pipe(tmp_path) -> None:
    """A result comes back through the loop's own pipe (`LoopPipe`), not
    `call_soon_threadsafe`: asyncio's self-pipe reader reads until `BlockingIOError`, a second
    `recvfrom` and an exception on every call. Many calls at once still all come back."""
    @tool
    def read_back(path: str) -> str:
        """Read a file."""
        return (tmp_path / path).read_text()

    (tmp_path / "a.txt").write_text("A")
    loop = asyncio.get_running_loop()
    wakes = 0
    original = loop._write_to_self  # type: ignore[attr-defined]

    def counted() -> None:
        nonlocal wakes
        wakes += 1
        original()

    loop._write_to_self = counted  # type: ignore[attr-defined]
    try:
        for _ in range(20):
            assert await read_back.invoke({"path": "a.txt"}, ToolContext()) == "A"
        texts = await asyncio.gather(*(read_back.invoke({"path": "a.txt"}, ToolContext())
                                       for _ in range(50)))
    finally:
        del loop._write_to_self  # type: ignore[attr-defined]
    assert texts == ["A"] * 50
    assert wakes == 0


def test_a_loop_that_cannot_watch_a_pipe_gets_results_by_call_soon_threadsafe() -> None:
    """Windows' proactor loop has no `add_reader`: results go back by the loop's own
    `call_soon_threadsafe`, as before."""
    class NoReaders(asyncio.SelectorEventLoop):
        def add_reader(self, *args: object) -> None:
            raise NotImplementedError

    loop = NoReaders()
    try:
        assert loop.run_until_complete(worker.run_in_thread(lambda: "done")) == "done"
        assert worker.loop_pipe(loop) is loop
    finally:
        loop.close()


def test_a_loops_pipe_keeps_neither_the_loop_nor_its_descriptors_once_it_is_gone() -> None:
    """Pipes are kept per loop in a weak dictionary: the pipe must not hold its loop, or no
    loop that ever ran a plain call would be freed; once the loop is, its pipe's descriptors
    close."""
    import gc
    import os
    import weakref

    loop = asyncio.new_event_loop()
    assert loop.run_until_complete(worker.run_in_thread(lambda: 1)) == 1
    pipe = worker.loop_pipe(loop)
    assert isinstance(pipe, worker.LoopPipe)
    descriptors = pipe._read, pipe._write
    gone = weakref.ref(loop)
    loop.close()
    asyncio.run(_one_more_call())  # the pool's last-loop shortcut moves to another loop
    del loop, pipe
    gc.collect()
    assert gone() is None
    for fd in descriptors:
        with pytest.raises(OSError):
            os.fstat(fd)


async def _one_more_call() -> None:
    assert await worker.run_in_thread(lambda: 2) == 2


async def test_a_plain_calls_caller_resumes_in_the_round_its_result_comes_back() -> None:
    """The result wakes the awaiting task in the loop's round that reads it, not one round
    later as an asyncio future's `set_result` would schedule it: one `epoll_wait` a call."""
    loop = asyncio.get_running_loop()
    selector = loop._selector  # type: ignore[attr-defined]
    rounds = 0
    original = selector.select

    def counted(timeout: float | None = None) -> object:
        nonlocal rounds
        rounds += 1
        return original(timeout)

    selector.select = counted
    try:
        for _ in range(10):  # the thread and the loop's pipe made
            await worker.run_in_thread(int)
        rounds = 0
        for _ in range(200):
            assert await worker.run_in_thread(lambda: 7) == 7
    finally:
        del selector.select
    assert rounds < 1.5 * 200  # one a call (two with asyncio's future)


async def test_callers_resumed_after_a_plain_call_keep_their_own_contextvars() -> None:
    """Resumed from the loop's pipe reader, each task still runs in its own context."""
    async def caller(name: str) -> list[str]:
        REQUEST_ID.set(name)
        seen = []
        for _ in range(20):
            await worker.run_in_thread(lambda: None)
            seen.append(REQUEST_ID.get())
        return seen

    answers = await asyncio.gather(*(caller(f"task-{n}") for n in range(8)))
    assert answers == [[f"task-{n}"] * 20 for n in range(8)]
    assert REQUEST_ID.get() == "none"


async def test_a_cancel_while_waiting_for_a_plain_call_still_reaches_the_caller() -> None:
    """The cancel wakes the task as asyncio's future would (the next round), and the result
    that comes back later is dropped."""
    release = threading.Event()
    started = threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "late"

    task = asyncio.ensure_future(worker.run_in_thread(slow))
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await worker.run_in_thread(lambda: "next") == "next"
