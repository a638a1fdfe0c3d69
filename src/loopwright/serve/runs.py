"""The runs one server process holds: each run's event log (what SSE clients replay from), the
clients watching it, and its pending approvals.

Events are serialised once, when they happen (`events.event_line`, the one home `--json` uses
too), and kept in order as ready SSE frames; an event's SSE id is its 1-based position in the log,
so a client that reconnects with `Last-Event-ID: N` gets exactly the events after N. Finished runs
stay for replay until `keep_finished` newer runs have finished, or their logs together pass
`keep_finished_bytes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from loopwright.events import TERMINAL_TYPES, Event, event_line, safe_json

if TYPE_CHECKING:
    from loopwright.agent import RunHandle
    from loopwright.result import RunResult
    from loopwright.safety.policy import ApprovalAnswer

KEEP_FINISHED = 200
"""Finished runs kept in memory for replay (older ones are still in the session store)."""
KEEP_FINISHED_BYTES = 256 * 2**20
"""At most this many bytes of finished runs' event logs are kept (the newest finished run always
is): a few runs with long outputs would otherwise hold gigabytes."""
KEEP_NEWS = 500
"""Frames of `RunNews` kept for clients that reconnect."""


def _event_data(event: Event) -> str:
    """`event` as its SSE data: its JSON line, but a result's messages without the system
    prompt, as `GET /sessions/{id}` shows a conversation. The prompt's environment section names
    the server's working directory (the user's name in it as often as not) and its machine; the
    operator's own prompt is theirs. Only a result is read back: once a run, not per token."""
    line = event_line(event)
    if getattr(event, "result", None) is None:
        return line
    data = json.loads(line)
    result = data.get("result")
    if isinstance(result, dict) and isinstance(result.get("messages"), list):
        result["messages"] = [message for message in result["messages"]
                              if not (isinstance(message, dict)
                                      and message.get("role") == "system")]
    return safe_json(json.dumps(data, ensure_ascii=False))


@dataclass(eq=False)
class PendingApproval:
    """One question waiting for `POST /runs/{id}/approvals/{call_id}`."""

    call_id: str
    answer: asyncio.Future[ApprovalAnswer]


@dataclass(eq=False, kw_only=True)
class ServeRun:
    """One run started over HTTP."""

    model: str | None = None
    output_type: str | None = None  # the server-side name of its typed output, if any
    stop_when_last_client_leaves: bool = False
    context_window: int | None = None  # tokens, as the agent found it when the run started
    prompt: str = ""  # what the run was started with (a page opening it live shows it)
    id: str = ""
    session_id: str = ""
    handle: RunHandle | None = None
    created: float = field(default_factory=time.time)
    events: list[bytes] = field(default_factory=list)  # SSE frames; id = index + 1
    size: int = 0  # bytes of `events`
    finished: bool = False
    stop_reason: str | None = None
    result: RunResult | None = None  # from the terminal event
    clients: int = 0
    approvals: dict[str, PendingApproval] = field(default_factory=dict)
    _wakers: set[asyncio.Event] = field(default_factory=set)
    _alone_since: float | None = None  # monotonic time the last client left
    _born: float = field(default_factory=time.monotonic)

    # -- the event callback --

    def __call__(self, event: Event) -> None:
        """Append one event (as its SSE frame: formatted once, whatever the number of clients)
        and wake every client waiting for it."""
        number = len(self.events) + 1
        frame = f"id: {number}\ndata: {_event_data(event)}\n\n".encode()
        self.events.append(frame)
        self.size += len(frame)
        if event.type in TERMINAL_TYPES and not event.agent:
            self.result = getattr(event, "result", None)
            self.stop_reason = getattr(self.result, "stop_reason", None) or event.type
            self.finished = True
        self.wake()

    def mark_finished(self) -> None:
        """The run's task ended (normally after its terminal event, which already said so)."""
        if not self.finished:
            self.finished = True
            self.stop_reason = self.stop_reason or "error"
        for pending in self.approvals.values():
            if not pending.answer.done():
                pending.answer.cancel()
        self.wake()

    def wake(self) -> None:
        for waker in self._wakers:
            waker.set()

    # -- clients --

    def frames(self, position: int) -> tuple[list[bytes], int]:
        """The SSE frames after the first `position` ones, and the position after them."""
        return self.events[position:], len(self.events)

    def attach(self) -> asyncio.Event:
        """A client starts watching: the event it waits on for news."""
        waker = asyncio.Event()
        self._wakers.add(waker)
        self.clients += 1
        self._alone_since = None
        return waker

    def detach(self, waker: asyncio.Event) -> None:
        self._wakers.discard(waker)
        self.clients -= 1
        if self.clients == 0:
            self._alone_since = time.monotonic()

    def unwatched_for(self) -> float:
        """Seconds since the last client left (0 while one is watching; since the run started
        when none ever came)."""
        if self.clients:
            return 0.0
        since = self._alone_since
        return time.monotonic() - (since if since is not None else self._born)

    def summary(self) -> dict[str, Any]:
        """The run as `GET /runs` and `GET /runs/{id}` show it."""
        return {"id": self.id, "session_id": self.session_id, "model": self.model,
                "output_type": self.output_type, "created": self.created,
                "context_window": self.context_window,
                "finished": self.finished,
                "stop_reason": self.stop_reason, "events": len(self.events),
                "clients": self.clients, "pending_approvals": sorted(self.approvals)}

    def detail(self) -> dict[str, Any]:
        """`GET /runs/{id}`: the summary, the prompt, and once the run has ended its output (the
        validated object as JSON with an output type, else the final text) and error, as in
        `done`."""
        result = self.result
        if result is None:
            return {**self.summary(), "prompt": self.prompt, "output": None, "error": None}
        output = result.output if isinstance(result.output, str) \
            else to_jsonable_python(result.output)
        return {**self.summary(), "prompt": self.prompt, "output": output,
                "error": result.error}


class RunNews:
    """Runs of this process starting and ending, as SSE frames (`GET /runs/news`): what lets the
    page list a new session and count live runs at once, without polling. Only the newest
    `keep` frames are held; a client that fell further behind misses the older ones (each frame
    carries the whole run summary, so the newest says all a list needs)."""

    def __init__(self, *, keep: int = KEEP_NEWS) -> None:
        self.keep = keep
        self.finished = False  # set when the server stops: every news stream then ends
        self._frames: list[bytes] = []
        self._dropped = 0  # frames trimmed off the front
        self._wakers: set[asyncio.Event] = set()

    def announce(self, kind: str, run: ServeRun) -> None:
        number = self._dropped + len(self._frames) + 1
        data = json.dumps({"type": kind, "run": run.summary()})
        self._frames.append(f"id: {number}\ndata: {data}\n\n".encode())
        if len(self._frames) > 2 * self.keep:  # trimmed in steps: appending stays O(1)
            self._dropped += len(self._frames) - self.keep
            del self._frames[:-self.keep]
        self.wake()

    def close(self) -> None:
        self.finished = True
        self.wake()

    def wake(self) -> None:
        for waker in self._wakers:
            waker.set()

    def frames(self, position: int) -> tuple[list[bytes], int]:
        start = max(position - self._dropped, 0)
        return self._frames[start:], self._dropped + len(self._frames)

    def attach(self) -> asyncio.Event:
        waker = asyncio.Event()
        self._wakers.add(waker)
        return waker

    def detach(self, waker: asyncio.Event) -> None:
        self._wakers.discard(waker)


class RunRegistry:
    """Every run of this process by id: live ones and the latest finished ones."""

    def __init__(self, *, keep_finished: int = KEEP_FINISHED,
                 keep_finished_bytes: int = KEEP_FINISHED_BYTES, leave_grace: float = 5.0
                 ) -> None:
        self.keep_finished = keep_finished
        self.keep_finished_bytes = keep_finished_bytes
        self.leave_grace = leave_grace  # how long a run may stay unwatched before it is stopped
        self._runs: OrderedDict[str, ServeRun] = OrderedDict()
        self._finished: deque[tuple[str, int]] = deque()  # (run id, bytes), oldest first
        self._finished_bytes = 0
        self._watchdogs: set[asyncio.Task[None]] = set()
        self.news = RunNews()

    def get(self, run_id: str) -> ServeRun | None:
        return self._runs.get(run_id)

    def all(self) -> list[ServeRun]:
        return list(self._runs.values())

    def live_session(self, session_id: str) -> ServeRun | None:
        """The live run of this process writing to `session_id`, if any."""
        return next((run for run in self._runs.values()
                     if run.session_id == session_id and not run.finished), None)

    def add(self, run: ServeRun, handle: RunHandle) -> None:
        run.handle = handle
        run.id = handle.run_id
        run.session_id = handle.session_id or ""
        self._runs[run.id] = run
        handle.task.add_done_callback(lambda _: self._finish(run))
        self.news.announce("run_started", run)
        if run.stop_when_last_client_leaves:
            watchdog = asyncio.ensure_future(self._stop_when_unwatched(run))
            self._watchdogs.add(watchdog)
            watchdog.add_done_callback(self._watchdogs.discard)

    def _finish(self, run: ServeRun) -> None:
        run.mark_finished()
        self.news.announce("run_finished", run)
        self._finished.append((run.id, run.size))
        self._finished_bytes += run.size
        while len(self._finished) > self.keep_finished or (
                self._finished_bytes > self.keep_finished_bytes and len(self._finished) > 1):
            run_id, size = self._finished.popleft()
            self._runs.pop(run_id, None)
            self._finished_bytes -= size

    async def _stop_when_unwatched(self, run: ServeRun) -> None:
        """Cancel `run` once it has had no client for `leave_grace` seconds."""
        while not run.finished:
            await asyncio.sleep(min(0.1, self.leave_grace))
            if run.unwatched_for() >= self.leave_grace and run.handle is not None:
                run.handle.cancel()
                return

    async def aclose(self) -> None:
        """Cancel every live run and wait for them to wind down; end the news streams."""
        self.news.close()
        live = [run.handle for run in self._runs.values()
                if run.handle is not None and not run.finished]
        for handle in live:
            handle.cancel()
        for handle in live:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(handle.task), 10.0)
        for watchdog in list(self._watchdogs):
            watchdog.cancel()
