"""`ThreadedStore`: the async face of a blocking store (SQLite), on a worker thread of its own.

Every call runs on one dedicated thread, in the order it was made, so the event loop never waits
for the disk or a database lock: while one store is locked by another process, every other run
in the same loop goes on. A locked database surfaces as `StoreBusy` after the store's own short
timeout; the recorder waits it out (see `store/recorder.py`).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from loopwright.messages import Message, Usage
from loopwright.store import Epoch, RunRecord, SessionInfo
from loopwright.worker_threads import Job, JobPipe, loop_pipe, run_job, serve

if TYPE_CHECKING:
    from loopwright.events import ModelCallRecord
    from loopwright.store.rows import DamagedSession
    from loopwright.store.search import SearchHit
    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.writes import StoreWrite

T = TypeVar("T")


class HeldFuture(asyncio.Future[None]):
    """A future that a cancel cannot take back. A task cancelled while awaiting it goes on
    waiting and raises its cancel once the future is done (asyncio's `Task.cancel`, when the
    awaited future refuses), which is what a write under way needs, without `asyncio.shield`:
    the shield's second future takes the result a round of the event loop later, one more
    `epoll_wait` and wake-up on every write."""

    def cancel(self, msg: Any | None = None) -> bool:
        return False


class ThreadedStore:
    """A `SessionStore` running a `SQLiteStore`'s calls on one worker thread, in call order."""

    opens_in_batch = True  # `write_batch` takes a new session's `OpenSession` (recorder.py)

    def __init__(self, store: SQLiteStore) -> None:
        self.sync = store
        self._thread: threading.Thread | None = None
        self._start()

    def _start(self) -> None:
        # Jobs on a pipe (`JobPipe`) and one `call_soon_threadsafe` per result
        # (worker_threads.py) rather than `run_in_executor`, whose futures and callbacks cost a
        # turn's hop more (0.16 M instructions a turn, docs/benchmarks.md); one thread of its
        # own keeps calls in order.
        self._jobs: JobPipe | None = JobPipe()
        # A daemon thread, so a store never closed does not hold the process at exit (every
        # write a caller awaited is committed by then; one cut off is rolled back, as a kill's
        # is); a store dropped unclosed ends its thread. The loop never joins it; a thread
        # started after `aclose` joins the one before, so the close is done before its calls.
        self._thread = threading.Thread(target=_serve_after, args=(self._thread, self._jobs),
                                        daemon=True, name="loopwright-store")
        self._thread.start()
        self._stop = weakref.finalize(self, self._jobs.put, None)

    def _pipe(self) -> JobPipe:
        """The thread's jobs; after `aclose`, a new thread's (its first call opens the file)."""
        if self._jobs is None:
            self._start()
        assert self._jobs is not None
        return self._jobs

    async def _call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        result: T = await run_job(self._pipe().put, functools.partial(method, *args, **kwargs))
        return result

    async def create(self, session_id: str, *, model: str = "", cwd: str = "", title: str = "",
                     parent_id: str | None = None, system_prompt: str | None = None) -> None:
        await self._call(self.sync.create, session_id, model=model, cwd=cwd, title=title,
                         parent_id=parent_id, system_prompt=system_prompt)

    async def update(self, session_id: str, **fields: Any) -> None:
        await self._call(self.sync.update, session_id, **fields)

    async def get(self, session_id: str) -> SessionInfo | None:
        return await self._call(self.sync.get, session_id)

    async def load(self, session_id: str) -> list[Message]:
        return await self._call(self.sync.load, session_id)

    async def append(self, session_id: str, message: Message) -> None:
        await self._call(self.sync.append, session_id, message)

    async def append_many(self, session_id: str, history: list[Message]) -> None:
        await self._call(self.sync.append_many, session_id, history)

    async def write_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> None:
        """Several writes in one transaction and one hop to the thread."""
        await self._call(self.sync.write_batch, session_id, writes)

    def start_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> HeldFuture:
        """`write_batch` handed to the thread now; its future says how it ended. Unlike a call
        awaited, it is never taken back: a task cancelled while awaiting it waits for it to
        commit or roll back whole, then raises its cancel (`HeldFuture`)."""
        loop = asyncio.get_running_loop()
        future = HeldFuture(loop=loop)  # its result comes back through the loop's `LoopPipe`
        self._pipe().put(Job(functools.partial(self.sync.write_batch, session_id, writes),
                             loop_pipe(loop), future))
        return future

    async def compact(self, session_id: str, history: list[Message]) -> int:
        return await self._call(self.sync.compact, session_id, history)

    async def resolve(self, prefix: str) -> str:
        return await self._call(self.sync.resolve, prefix)

    async def lineage(self, session_id: str) -> list[Epoch]:
        return await self._call(self.sync.lineage, session_id)

    async def children(self, session_id: str) -> list[SessionInfo]:
        return await self._call(self.sync.children, session_id)

    async def list_sessions(self, *, cwd: str | None = None, model: str | None = None,
                            limit: int = 20, damaged: list[DamagedSession] | None = None
                            ) -> list[SessionInfo]:
        return await self._call(self.sync.list_sessions, cwd=cwd, model=model, limit=limit,
                                damaged=damaged)

    async def acquire(self, session_id: str, owner: str) -> None:
        await self._call(self.sync.acquire, session_id, owner)

    async def open_session(self, session_id: str, owner: str, **fields: Any) -> bool:
        """Create unless it exists and take the lease: one hop (`SQLiteStore.open_session`)."""
        return await self._call(self.sync.open_session, session_id, owner, **fields)

    async def renew(self, session_id: str, owner: str) -> None:
        await self._call(self.sync.renew, session_id, owner)

    async def release(self, session_id: str, owner: str) -> None:
        await self._call(self.sync.release, session_id, owner)

    async def record_run(self, session_id: str, record: RunRecord, *, model: str = "",
                         ended: bool = False) -> None:
        await self._call(self.sync.record_run, session_id, record, model=model, ended=ended)

    async def record_turn(self, session_id: str, run_id: str, turn: int, usage: Usage,
                          cost: float | None) -> None:
        await self._call(self.sync.record_turn, session_id, run_id, turn, usage, cost)

    async def turns(self, session_id: str) -> list[dict[str, Any]]:
        return await self._call(self.sync.turns, session_id)

    async def record_events(self, session_id: str, run_id: str,
                            events: list[dict[str, Any]]) -> None:
        await self._call(self.sync.record_events, session_id, run_id, events)

    async def runs(self, session_id: str) -> list[dict[str, Any]]:
        return await self._call(self.sync.runs, session_id)

    async def events(self, session_id: str) -> list[dict[str, Any]]:
        return await self._call(self.sync.events, session_id)

    async def model_calls(self, session_id: str) -> list[ModelCallRecord]:
        return await self._call(self.sync.model_calls, session_id)

    async def delete(self, session_id: str) -> None:
        await self._call(self.sync.delete, session_id)

    async def search(self, text: str, *, limit: int = 10, any_word: bool = False,
                     exclude_session: str | None = None, cwd: str | None = None,
                     damaged: list[DamagedSession] | None = None) -> list[SearchHit]:
        return await self._call(self.sync.search, text, limit=limit, any_word=any_word,
                                exclude_session=exclude_session, cwd=cwd, damaged=damaged)

    async def aclose(self) -> None:
        """Close the file and end the thread once the calls before it have run; a later call
        starts both again."""
        jobs, stop = self._pipe(), self._stop
        self._jobs = None  # a call made while this one waits goes to the next thread
        try:
            await run_job(jobs.put, self.sync.close)
        finally:
            stop()  # the thread ends once the close has run (or was given up on)


def _serve_after(before: threading.Thread | None, jobs: JobPipe) -> None:
    """`serve` the jobs once the thread `before` (the one `aclose` ended) has ended."""
    if before is not None:
        before.join()
    serve(jobs)
