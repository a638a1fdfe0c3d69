"""A run's store writes, queued in order and written out together (`store/recorder.py`'s
queue): one transaction a flush, a busy store waited out, a failed one final."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from loopwright.store import StoreBusy
from loopwright.store.writes import (
    AppendMessages,
    StoreWrite,
    new_append_messages,
    new_record_events,
    written_messages,
)

if TYPE_CHECKING:
    from loopwright.events import StatusKind
    from loopwright.messages import Message
    from loopwright.plugins import RunView

BUSY_FIRST_DELAY, BUSY_MAX_DELAY = 0.05, 2.0  # seconds between tries while the store is busy


class WriteQueue:
    """One run's store writes, queued in the order they were made and written out together.

    `flush` writes everything queued in one write started by `start_write` (one transaction); with
    `durable_only` only when something that must be durable is queued. A busy or locked store
    (`StoreBusy`) is waited out with backoff for as long as it takes, with a `store_busy` status
    while waiting: nothing is ever skipped. Any other store error is final: later writes are
    dropped, so what is stored stays a clean prefix of the run, and `failure` says why (the
    recorder then stops the run).

    A turn queues a message or an event at a time. The events of a run go to one list of
    rows, and each message joins the messages queued last (`put_message`), so a flush hands the
    store one write of each rather than one for each run of messages between events: a store
    writes a batch's events after its other rows anyway (`writes.merged`), and only the order
    within each table matters."""

    def __init__(self, start_write: Callable[[Sequence[StoreWrite]], asyncio.Future[None]],
                 report: Callable[[RunView, StatusKind, str], None]) -> None:
        self._start_write = start_write
        self._report = report
        self._pending: list[StoreWrite] = []  # in order, but for the rows of `_events`
        self._events: list[dict[str, Any]] = []  # rows of events of run `_events_run`
        self._events_run = ""
        self._durable = False  # something queued must be durable at the next flush
        # one flush at a time: `_flushing` while one is under way, and `_idle`, made only when
        # another flush has to wait, done when it ends (no `asyncio.Lock`: its entry and exit
        # were five coroutine and method calls on every flush)
        self._flushing = False
        self._idle: asyncio.Future[None] | None = None
        self._run: RunView | None = None
        self._taking = True  # writes are queued: the store has not failed, the queue is open
        self.open = False  # from `start` until `close`
        self.failure: str | None = None
        self.written = 0  # writes the store took
        self.attached = False  # a message with attachments was queued (then `_has_bytes` looks)

    def start(self, run: RunView) -> None:
        self._run = run
        self.open = True

    def fail(self, run: RunView, reason: str) -> None:
        """The store failed for good (or the session is no longer this run's): every later
        write is dropped, and the recorder stops the run with `reason`."""
        self.failure = reason
        self._report(run, "store_error", f"the session store failed: {reason}")
        self._taking = False
        self._pending.clear()
        self._events.clear()

    def put(self, write: StoreWrite, *, durable: bool = False) -> None:
        """Queue a write (writes queued before `start` wait for the first flush after it)."""
        if self._taking:
            self._pending.append(write)
            self._durable = self._durable or durable
            if any(m.attachments for m in written_messages(write)):
                self.attached = True

    def put_message(self, message: Message) -> None:
        """Queue a message, which must be durable at the next flush."""
        if not self._taking:
            return
        if message.attachments:
            self.attached = True
        pending = self._pending
        last = pending[-1] if pending else None
        if isinstance(last, AppendMessages):  # a list only this queue holds until a flush
            last.messages.append(message)
        else:
            pending.append(new_append_messages(messages=[message]))
        self._durable = True

    def put_event(self, run_id: str, row: dict[str, Any], *, durable: bool = False) -> None:
        """Queue one event's row of run `run_id`."""
        if run_id != self._events_run or not self._taking:
            if not self._taking:
                return
            self._take_events()
            self._events_run = run_id
        self._events.append(row)
        if durable:
            self._durable = True

    def _take_events(self) -> None:
        """The event rows queued so far, as one write at the end of `_pending`."""
        if self._events:
            self._pending.append(new_record_events(run_id=self._events_run, events=self._events))
            self._events = []

    async def flush(self, *, durable_only: bool = False) -> None:
        """Write out everything queued so far (or the store failed); after the flush under way,
        if there is one."""
        if self._run is None:
            return
        while self._flushing:  # one after the other: a flush also waits for the one in flight
            if self._idle is None:
                self._idle = asyncio.get_running_loop().create_future()
            await asyncio.wait([self._idle])  # a cancel here leaves the future to the others
        if not self._due(durable_only):
            return
        self._flushing = True
        try:
            self._take_events()
            writes, self._pending, self._durable = self._pending, [], False
            if self.failure is None:
                await self._until_done(writes)
        finally:
            self._flushing = False
            idle, self._idle = self._idle, None
            if idle is not None:
                idle.set_result(None)

    def settled(self, *, durable_only: bool = False) -> bool:
        """Whether `flush` would neither write nor wait: nothing due and none under way (a
        caller that would await it for nothing skips it, a coroutine fewer)."""
        return not self._flushing and not self._due(durable_only)

    def _due(self, durable_only: bool) -> bool:
        """Whether a flush has something to write."""
        return bool(self._pending or self._events) and (self._durable or not durable_only)

    async def close(self) -> None:
        await self.flush()
        self._taking = self.open = False

    async def _until_done(self, writes: list[StoreWrite]) -> None:
        """`writes` tried until the store takes them (a busy store waited out) or fails.

        Each try is seen through to its end even if the run is cancelled meanwhile: once
        handed to the store it may sit in its thread's queue (a job an awaited call would
        abandon on a cancel; `start_batch`'s never is) or be inside a transaction, and one cut
        off there would be lost while later writes land (a cancelled call's result stored
        without its call). The cancel is raised after it (`start_batch`'s future refuses a
        cancel, so its awaiter waits on; a task writing is shielded); a try the store turned
        away (busy) stays queued for the next flush. (One coroutine for both: the run's task
        suspends through every frame between it and the write, on every turn.)"""
        run = self._run
        assert run is not None
        delay, waited = BUSY_FIRST_DELAY, 0.0
        while True:
            attempt = self._start_write(writes)
            try:
                await (asyncio.shield(attempt) if isinstance(attempt, asyncio.Task) else attempt)
            except asyncio.CancelledError:
                if not attempt.done():
                    await asyncio.wait([attempt])
                if not attempt.cancelled() and attempt.exception() is not None:
                    self._pending[:0] = writes
                    self._durable = True
                raise
            except StoreBusy as exc:
                if not waited:
                    self._report(run, "store_busy", f"the session store is busy; waiting for it "
                                 f"(nothing is skipped): {exc}")
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 2, BUSY_MAX_DELAY)
                continue
            except Exception as exc:  # a store's own bug is a failure too, never a dead writer
                self.fail(run, str(exc) or type(exc).__name__)
                return
            self.written += 1
            if waited:
                self._report(run, "store_ready", "the session store is writable again "
                             f"(waited ~{waited:.1f}s)")
            return
