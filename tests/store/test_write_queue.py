"""The recorder's queue writes one flush at a time, in order, whatever a waiting flush does."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from loopwright import messages
from loopwright.store.write_queue import WriteQueue
from loopwright.store.writes import AppendMessages, StoreWrite


class Writes:
    """A store's side of the queue: each write under way until the test lets it end."""

    def __init__(self) -> None:
        self.started: list[list[str]] = []
        self.ends: list[asyncio.Future[None]] = []

    def start(self, writes: Sequence[StoreWrite]) -> asyncio.Future[None]:
        self.started.append([m.content for w in writes if isinstance(w, AppendMessages)
                             for m in w.messages])
        end: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ends.append(end)
        return end


def queue(writes: Writes) -> WriteQueue:
    q = WriteQueue(writes.start, lambda run, kind, text: None)
    q.start(object())  # type: ignore[arg-type]  # the run is only told of a busy store
    return q


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_flush_during_another_writes_after_it_ends() -> None:
    writes = Writes()
    q = queue(writes)
    q.put_message(messages.user("one"))
    first = asyncio.ensure_future(q.flush())
    await settle()
    q.put_message(messages.user("two"))
    second = asyncio.ensure_future(q.flush())
    await settle()
    assert writes.started == [["one"]]  # the second waits for the write in flight
    writes.ends[0].set_result(None)
    await settle()
    assert first.done() and writes.started == [["one"], ["two"]]
    writes.ends[1].set_result(None)
    await second
    assert q.written == 2


async def test_a_flush_with_nothing_due_still_waits_for_the_one_in_flight() -> None:
    writes = Writes()
    q = queue(writes)
    q.put_message(messages.user("one"))
    first = asyncio.ensure_future(q.flush())
    await settle()
    waiting = asyncio.ensure_future(q.flush(durable_only=True))
    await settle()
    assert not waiting.done()
    writes.ends[0].set_result(None)
    await asyncio.gather(first, waiting)
    assert writes.started == [["one"]]


async def test_a_waiting_flush_cancelled_leaves_the_others_going() -> None:
    writes = Writes()
    q = queue(writes)
    q.put_message(messages.user("one"))
    first = asyncio.ensure_future(q.flush())
    await settle()
    cancelled = asyncio.ensure_future(q.flush())
    third = asyncio.ensure_future(q.flush())
    await settle()
    cancelled.cancel()
    await settle()
    assert cancelled.cancelled() and not first.done()
    q.put_message(messages.user("two"))
    writes.ends[0].set_result(None)
    await settle()
    assert writes.started == [["one"], ["two"]]  # the third took the next write
    writes.ends[1].set_result(None)
    await asyncio.gather(first, third)
    q.put_message(messages.user("three"))
    later = asyncio.ensure_future(q.flush())
    await settle()
    writes.ends[2].set_result(None)
    await later
    assert writes.started[-1] == ["three"] and q.written == 3


async def test_a_failed_write_ends_the_flush_and_lets_the_next_one_through() -> None:
    writes = Writes()
    q = queue(writes)
    q.put_message(messages.user("one"))
    first = asyncio.ensure_future(q.flush())
    await settle()
    after = asyncio.ensure_future(q.flush(durable_only=True))
    writes.ends[0].set_exception(RuntimeError("disk on fire"))
    await asyncio.gather(first, after)
    assert q.failure == "disk on fire"
    q.put_message(messages.user("two"))  # dropped: the store failed for good
    await q.flush()
    assert len(writes.started) == 1

