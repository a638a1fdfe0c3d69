"""Blocking work off the event loop's thread: plain `def` tools and a run's system prompt (on a
pool of threads) and the SQLite store (on a thread of its own, `store/threaded.py`, which feeds
`serve` its own queue).

`asyncio.to_thread` costs about 0.06 M instructions a call more than this module (callgrind,
docs/benchmarks.md; waking the loop, which any off-loop call needs, is the rest of a hop's
0.13 M): a `concurrent.futures.Future`
(a `Condition` each), the executor's idle semaphore on submit and on finish, and the two
futures chained by callbacks. A tool call needs less: the job handed to an idle thread, the
result handed back with one `call_soon_threadsafe`. What stays as `to_thread` had it: the
caller's contextvars are copied into the call (a tool may read them, as serve's approvals do);
a call the awaiting task gave up on (cancelled) before a thread took it never starts, and one
already running is not waited for — the thread finishes it and the result is dropped. Threads
are made as calls need them, up to `MAX_THREADS` (as many as the default executor's), and stay
for the next call; they are daemon threads, so a tool stuck forever does not keep the process
from exiting.

Calls queue up in `_waiting`; each idle thread sleeps on a pipe of its own (`JobPipe`). A call
wakes the thread idle last (its code and data likeliest still in the core's caches), or starts
one, unless a thread woken before is still on its way: that one takes the first call waiting
and, if more wait, wakes the next before it runs its own, so every call soon has a thread
(until `MAX_THREADS` are busy) while a burst of calls costs one wake-up at a time, and a thread
done with its job takes the next waiting one without sleeping. Not one `queue.SimpleQueue`
that every idle thread waits on: its `put` wakes a thread while the loop's thread still holds
the interpreter's lock, and the woken thread sleeps again until it is let go, ~6 context
switches a hop instead of 2 on one core (docs/benchmarks.md, issue 31).

A pool call's result goes back to its event loop through that loop's `LoopPipe` (a deque and
a pipe the loop watches), not `call_soon_threadsafe`: asyncio's self-pipe reader reads until
its socket raises `BlockingIOError`, so every hand-back cost the loop's thread a second
`recvfrom` and an exception made and caught (docs/benchmarks.md, issue 31, thirteenth session);
and the caller's task resumes in the loop's round that reads the result (`WakingFuture`), not
one round later.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

MAX_THREADS = 32


class ResultSink(Protocol):
    """Where a job's result goes: its event loop (`call_soon_threadsafe` runs the callback
    there), or a way of its own to that loop (its `LoopPipe`)."""

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any) -> object: ...


class Job:
    """A call to run off the loop: the function, the caller's contextvars, where the result goes."""

    __slots__ = ("abandoned", "context", "function", "future", "loop")

    def __init__(self, function: Callable[[], Any], loop: ResultSink,
                 future: asyncio.Future[Any]) -> None:
        self.function = function
        self.context = contextvars.copy_context()
        self.loop = loop
        self.future = future
        self.abandoned = False


class JobPipe:
    """One thread's jobs, in order: a deque, and a pipe the thread sleeps on while the deque is
    empty, woken by one byte (a pool thread's, and the session store's, store/threaded.py).

    Not a `queue.SimpleQueue`, whose `put` wakes the thread (a futex) while the putting thread
    still holds the interpreter's lock: the woken thread found the lock taken and slept again,
    and on one core that was ~6 context switches a hop instead of 2 (docs/benchmarks.md). An
    `os.write` lets go of the lock before it wakes the thread, which then takes it at once
    (2 context switches a hop on one core). The write end never blocks: a byte is
    written only when the thread may be asleep (`_awake` false, at most one a wait), and a
    full pipe (never, in practice) means the thread has bytes to wake on already."""

    __slots__ = ("__weakref__", "_awake", "_jobs", "_read", "_write")

    def __init__(self) -> None:
        self._jobs: collections.deque[Job | None] = collections.deque()
        self._read, self._write = wake_pipe(self)  # the thread's reads block: it sleeps there
        self._awake = True  # the thread is not waiting on the pipe (no byte needed)

    def put(self, job: Job | None) -> None:
        """Queue `job` (None: the thread stops after the jobs before it); from any thread."""
        self._jobs.append(job)
        if not self._awake:
            self._awake = True
            try:
                os.write(self._write, b"\0")
            except BlockingIOError:  # full: the thread has bytes to wake on already
                return

    def get(self) -> Job | None:
        """The next job, waiting for one (the pipe's own thread only)."""
        jobs = self._jobs
        while not jobs:
            self._awake = False
            if jobs:  # put between the test and the flag: it saw the flag still set
                self._awake = True
                break
            os.read(self._read, 512)  # the interpreter's lock let go while it waits
            self._awake = True
        return jobs.popleft()


class LoopPipe:
    """Where worker threads hand results back to one event loop: a deque, and a pipe the loop
    watches (`add_reader`), written one byte when the loop may not have been woken yet. Not the
    loop's `call_soon_threadsafe`: it wakes the loop through its self-pipe, whose reader reads
    until the socket raises `BlockingIOError` (a second `recvfrom` and an exception made and
    caught on every call), and runs each result as a handle of its own. Neither end ever
    blocks; the descriptors are closed once nothing holds this (a job, the loop's reader), and
    it holds no reference to its loop, so a loop's pipe (kept per loop, `loop_pipe`) never
    keeps the loop alive."""

    __slots__ = ("__weakref__", "_done", "_read", "_signalled", "_write")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._done: collections.deque[tuple[Callable[..., object], tuple[Any, ...]]] = (
            collections.deque())
        self._read, self._write = wake_pipe(self, blocking_read=False)
        self._signalled = False  # a byte is on its way that the loop has not read yet
        loop.add_reader(self._read, self.run_done)

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any) -> None:
        """(A worker thread.) `callback(*args)` on the loop, soon; nothing if the loop closed
        meanwhile (nobody waits then)."""
        self._done.append((callback, args))
        if not self._signalled:
            self._signalled = True
            try:  # (not contextlib.suppress: a context manager's frames on every call)
                os.write(self._write, b"\0")
            except BlockingIOError:  # full: the loop has bytes to wake on already
                return

    def run_done(self) -> None:
        """(The loop, its pipe readable.) Every result handed back so far. The flag is let go
        before the deque is read: a result added after it was read writes a byte again."""
        try:  # noqa: SIM105 (contextlib.suppress: a context manager's frames on every call)
            os.read(self._read, 512)
        except BlockingIOError:  # (never, in practice: the loop calls this with a byte there)
            pass
        self._signalled = False
        done = self._done
        while done:
            callback, args = done.popleft()
            callback(*args)


Waker = tuple[Callable[["WakingFuture"], object], contextvars.Context | None]


class WakingFuture(asyncio.Future[Any]):
    """The future a pool call's caller awaits. Its result is set from a loop callback (the
    `LoopPipe`'s reader, or `call_soon_threadsafe`'s handle), never from inside a task, so it
    wakes the awaiting task there and then, where asyncio's future schedules the wake-up for the
    loop's next round: a round of the event loop fewer a call (its `epoll_wait` and
    `_run_once`). A task awaits it as any future-like object (asyncio's `add_done_callback`
    protocol); a cancel still wakes the task with `call_soon`, as asyncio does."""

    _wakers: tuple[Waker, ...] = ()  # the callbacks to run once it is done (set per object)

    def add_done_callback(self, fn: Callable[[WakingFuture], object], /, *,
                          context: contextvars.Context | None = None) -> None:
        if self.done():
            super().add_done_callback(fn, context=context)
        else:
            self._wakers = (*self._wakers, (fn, context))

    def remove_done_callback(self, fn: Callable[[WakingFuture], object], /) -> int:
        kept = tuple(waker for waker in self._wakers if waker[0] != fn)
        removed = len(self._wakers) - len(kept)
        self._wakers = kept
        return removed + super().remove_done_callback(fn)

    def set_result(self, result: Any, /) -> None:
        super().set_result(result)
        self._wake()

    def set_exception(self, exception: type | BaseException, /) -> None:
        super().set_exception(exception)
        self._wake()

    def cancel(self, msg: Any | None = None) -> bool:
        if not super().cancel(msg):
            return False
        wakers, self._wakers = self._wakers, ()
        loop = self.get_loop()
        for fn, context in wakers:
            loop.call_soon(fn, self, context=context)
        return True

    def _wake(self) -> None:
        wakers, self._wakers = self._wakers, ()
        for fn, context in wakers:
            if context is None:
                fn(self)
            else:
                context.run(fn, self)


_pipes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopPipe | asyncio.AbstractEventLoop]
_pipes = weakref.WeakKeyDictionary()
_last: tuple[weakref.ref[asyncio.AbstractEventLoop], LoopPipe | asyncio.AbstractEventLoop] | None
_last = None  # the last loop's, found without the weak dictionary's Python (a weak reference
# made on every look-up)


def loop_pipe(loop: asyncio.AbstractEventLoop) -> LoopPipe | asyncio.AbstractEventLoop:
    """The way back to `loop` for results from worker threads: its `LoopPipe`, made the first
    time; `loop` itself where it cannot watch a pipe (Windows' proactor loop)."""
    global _last
    last = _last
    if last is not None and last[0]() is loop:
        return last[1]
    back = _pipes.get(loop)
    if back is None:
        try:
            back = LoopPipe(loop)
        except NotImplementedError:
            back = loop
        _pipes[loop] = back
    _last = (weakref.ref(loop), back)
    return back


def wake_pipe(owner: object, *, blocking_read: bool = True) -> tuple[int, int]:
    """A pipe for waking whoever reads it (`JobPipe`'s thread, or an event loop watching it:
    `LoopPipe`): its write end never blocks, and both ends are closed once `owner` is
    gone — only then, as nothing can write to them any more (a closed descriptor's number may
    be another file's by then); at exit the process's end closes them."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    if not blocking_read:
        os.set_blocking(read, False)
    weakref.finalize(owner, _close_both, read, write).atexit = False
    return read, write


def _close_both(read: int, write: int) -> None:
    os.close(read)
    os.close(write)


_lock = threading.Lock()
_parked: list[JobPipe] = []  # idle threads' pipes, the one idle last at the end
_waiting: collections.deque[Job] = collections.deque()  # jobs no thread has taken yet
_threads = 0
_waking = 0  # threads woken (or started) that have not looked at `_waiting` yet


def run_in_thread(function: Callable[[], Any]) -> Coroutine[Any, Any, Any]:
    """`function()` on a worker thread, with the caller's contextvars: to await, for its result
    or error; the result comes back through the loop's `LoopPipe`. (A plain function: no
    coroutine of its own around `run_job`'s, a frame fewer to make and to pass the wake-up
    through on every call.)"""
    return run_job(_submit, function, back=loop_pipe)


async def run_job(submit: Callable[[Job], None], function: Callable[[], Any], *,
                  back: Callable[[asyncio.AbstractEventLoop], ResultSink] | None = None) -> Any:
    """`function()` as a `Job` handed to `submit` (a queue some thread serves, as `serve`
    does); its result or error once that thread has run it, handed back to the running loop
    by its `call_soon_threadsafe`, or by what `back` gives for the loop."""
    loop = asyncio.get_running_loop()
    if back is None:
        future: asyncio.Future[Any] = loop.create_future()
        job = Job(function, loop, future)
    else:
        future = WakingFuture(loop=loop)
        job = Job(function, back(loop), future)
    submit(job)
    try:
        return await future
    except asyncio.CancelledError:
        job.abandoned = True  # not started yet: it never will be
        raise


def _submit(job: Job) -> None:
    """Queued for the pool; a thread woken for it unless one is on its way already (which takes
    it, or wakes the next)."""
    with _lock:
        _waiting.append(job)
        wake = None if _waking else _summon()
    if wake is not None:
        _wake(*wake)


def _summon() -> tuple[JobPipe | None, bool] | None:
    """(Under `_lock`.) One thread more on its way to `_waiting`: the one idle last (its pipe),
    else a new one (True), up to `MAX_THREADS`; None: every thread busy, the first free takes
    the job."""
    global _threads, _waking
    if _parked:
        _waking += 1
        return _parked.pop(), False
    if _threads < MAX_THREADS:
        _threads += 1
        _waking += 1
        return None, True
    return None


def _wake(pipe: JobPipe | None, start: bool) -> None:
    if pipe is not None:
        pipe.put(None)  # popped: this is its one wake-up until it parks again
    elif start:
        threading.Thread(target=_work, name="loopwright-tool", daemon=True).start()


def _forget_threads() -> None:
    """A forked child has none of its parent's threads: counted as idle, they would take no job
    and the child's first `def` tool would wait for ever."""
    global _lock, _parked, _waiting, _threads, _waking, _pipes, _last
    _lock, _parked, _waiting = threading.Lock(), [], collections.deque()
    _threads = _waking = 0
    _pipes, _last = weakref.WeakKeyDictionary(), None  # the parent's pipes are its loops' own


os.register_at_fork(after_in_child=_forget_threads)


def _work() -> None:
    """A pool thread: the waiting jobs while there are any, then asleep on its pipe until a
    call wakes it."""
    global _waking
    pipe = JobPipe()
    while True:
        with _lock:
            _waking -= 1
            job, wake = _take(pipe)
        while job is not None:
            if wake is not None:  # more wait and no thread is on its way: one before this job
                _wake(*wake)
            outcome = None if job.abandoned else _outcome(job)
            # idle before the hand-back, not after: the hand-back wakes the loop's thread,
            # which then waited for this one to take the interpreter's lock again for its
            # bookkeeping (a context switch more per call, ~10 % of a hop's CPU on one core)
            with _lock:
                following, wake = _take(pipe)
            if outcome is not None:
                _hand_back(job, *outcome)
            job = following
            del following, outcome
        pipe.get()


def _take(pipe: JobPipe) -> tuple[Job | None, tuple[JobPipe | None, bool] | None]:
    """(Under `_lock`.) The next waiting job and, if more wait with no thread on its way, a
    thread to wake for them; with none waiting, `pipe`'s thread parks."""
    if not _waiting:
        _parked.append(pipe)
        return None, None
    job = _waiting.popleft()
    return job, (_summon() if _waiting and not _waking else None)


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
