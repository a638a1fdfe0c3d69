"""`ThreadedStore`'s hop to its worker thread: results, errors, order, and exit; its jobs' pipe
(`JobPipe`): no wake-up lost, never blocking the caller, one byte a wake-up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from loopwright.errors import SessionError
from loopwright.messages import user
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import JobPipe, ThreadedStore


def test_calls_run_off_the_loop_in_order_and_errors_reach_the_caller(tmp_path: Path) -> None:
    async def go() -> None:
        store = ThreadedStore(SQLiteStore(tmp_path / "s.db"))
        loop_thread = threading.get_ident()
        seen: list[int] = []
        original = store.sync.append

        def append(session_id: str, message: object) -> None:
            seen.append(threading.get_ident())
            original(session_id, message)  # type: ignore[arg-type]

        store.sync.append = append  # type: ignore[method-assign]
        await store.create("s1")
        await asyncio.gather(*(store.append("s1", user(f"m{i}")) for i in range(20)))
        assert [m.content for m in await store.load("s1")] == [f"m{i}" for i in range(20)]
        assert seen and loop_thread not in seen
        with pytest.raises(SessionError, match="no session"):
            await store.resolve("nothing-like-it")
        await store.aclose()

    asyncio.run(go())


def test_a_store_never_closed_lets_the_process_exit(tmp_path: Path) -> None:
    """The worker thread does not hold the process at exit, with a store left open."""
    path = tmp_path / "s.db"
    script = textwrap.dedent(f"""
        import asyncio
        from loopwright.messages import user
        from loopwright.store.sqlite import SQLiteStore
        from loopwright.store.threaded import JobPipe, ThreadedStore

        STORE = ThreadedStore(SQLiteStore({str(path)!r}))

        async def go():
            await STORE.create("s1")
            for i in range(50):
                await STORE.append("s1", user(f"m{{i}}"))

        asyncio.run(go())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    with SQLiteStore(path) as store:
        assert store.message_count("s1") == 50


def test_jobs_from_several_threads_are_all_taken_in_each_ones_order() -> None:
    """The store thread's pipe loses no wake-up: producers putting while its thread goes to
    sleep and wakes (`JobPipe`'s flag and its re-check) never leave a job in the queue."""
    jobs = JobPipe()
    taken: list[tuple[int, int]] = []

    def consume() -> None:
        while (job := jobs.get()) is not None:
            taken.append(job)  # type: ignore[arg-type]

    def produce(who: int) -> None:
        for n in range(20_000):
            jobs.put((who, n))  # type: ignore[arg-type]

    consumer = threading.Thread(target=consume)
    consumer.start()
    producers = [threading.Thread(target=produce, args=(who,)) for who in range(3)]
    for producer in producers:
        producer.start()
    for producer in producers:
        producer.join()
    jobs.put(None)
    consumer.join(timeout=120)  # a lost wake-up would leave it asleep for ever
    assert not consumer.is_alive()
    assert len(taken) == 60_000
    for who in range(3):
        assert [n for w, n in taken if w == who] == list(range(20_000))


def test_putting_never_blocks_the_caller_however_many_jobs_wait() -> None:
    """More jobs than the pipe holds bytes, put while the thread is busy, and a pipe filled
    up to the brim: `put` returns every time, and every job is taken."""
    jobs = JobPipe()
    for n in range(200_000):  # no thread yet: nothing is taken, and no byte written
        jobs.put(n)  # type: ignore[arg-type]
    assert [jobs.get() for _ in range(200_000)] == list(range(200_000))
    filled = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            filled += os.write(jobs._write, b"\0" * 4096)
    assert filled >= 4096  # the pipe is full now
    jobs._awake = False  # as if the thread slept on it
    jobs.put(7)  # type: ignore[arg-type]
    assert jobs.get() == 7


async def test_a_hop_wakes_the_store_thread_with_one_byte_at_most(tmp_path: Path) -> None:
    """A call that may find the thread asleep writes one byte; one made while it works (or
    before it has gone back to sleep) writes none."""
    store = ThreadedStore(SQLiteStore(tmp_path / "s.db"))
    writes: list[int] = []
    original = os.write

    def counting(fd: int, data: bytes) -> int:
        if fd == store._jobs._write:
            writes.append(len(data))
        return original(fd, data)

    os.write = counting  # type: ignore[assignment]
    try:
        await store.create("s1")
        for n in range(10):
            await store.append("s1", user(f"m{n}"))
        await asyncio.gather(*(store.append("s1", user(f"p{n}")) for n in range(50)))
    finally:
        os.write = original
    assert writes and writes == [1] * len(writes) and len(writes) <= 61
    assert (await store.get("s1")).message_count == 60  # type: ignore[union-attr]
    await store.aclose()


async def test_write_batches_come_back_through_the_loops_own_pipe(tmp_path: Path) -> None:
    """`start_batch`'s results reach the loop through its pipe (`worker_threads.LoopPipe`), none
    lost however they interleave, a failure as the awaiter's error; the loop's own
    `call_soon_threadsafe` (its self-pipe) is left to the store's other calls."""
    from loopwright.store.writes import AppendMessages, RecordEvents

    store = ThreadedStore(SQLiteStore(tmp_path / "s.db"))
    await store.create("s1")
    loop = asyncio.get_running_loop()
    woken: list[object] = []
    original = loop.call_soon_threadsafe

    def counting(callback: object, *args: object, **kw: object) -> object:
        woken.append(callback)
        return original(callback, *args, **kw)  # type: ignore[arg-type]

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        for n in range(20):
            await store.start_batch("s1", [AppendMessages(messages=[user(f"m{n}")])])
        await asyncio.gather(*(store.start_batch("s1", [AppendMessages(
            messages=[user(f"p{n}")])]) for n in range(200)))
        with pytest.raises(SessionError):  # events of a run that has no row: refused
            await store.start_batch("nothing-like-it", [RecordEvents(run_id="r", events=[
                {"type": "turn_start", "turn": 1}])])
    finally:
        loop.call_soon_threadsafe = original  # type: ignore[method-assign]
    assert woken == []
    assert (await store.get("s1")).message_count == 220  # type: ignore[union-attr]
    await store.aclose()


def test_a_store_serves_one_event_loop_after_another(tmp_path: Path) -> None:
    """A loop closed with the store still open leaves it working for the next loop."""
    from loopwright.store.writes import AppendMessages

    store = ThreadedStore(SQLiteStore(tmp_path / "s.db"))

    async def write(text: str) -> None:
        await store.start_batch("s1", [AppendMessages(messages=[user(text)])])

    async def first() -> None:
        await store.create("s1")
        await write("one")

    asyncio.run(first())
    asyncio.run(write("two"))

    async def last() -> list[str]:
        try:
            return [m.content for m in await store.load("s1")]
        finally:
            await store.aclose()

    assert asyncio.run(last()) == ["one", "two"]
