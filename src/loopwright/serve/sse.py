"""`GET /runs/{id}/events`: a run's events as Server-Sent Events.

Each event is one `data:` line holding the same JSON object `loopwright run --json` prints, with
`id:` its position in the run's log. A client that reconnects with `Last-Event-ID: N` (browsers
do it by themselves) or `?after=N` gets everything after event N, so it misses nothing. The stream
ends after the run's terminal event. A comment line goes out every `keepalive` seconds while
nothing happens, so proxies keep the connection and a vanished client is noticed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

KEEPALIVE = 15.0
RETRY_MS = 1000  # how soon a browser reconnects after the connection drops
WRITE_BYTES = 64 * 1024
"""The most one write to a client holds: a client that stops reading is left holding one write
in the server's buffers, not a copy of the whole log (uvicorn waits for it to read before the
next write)."""


class FrameSource(Protocol):
    """A log of ready SSE frames clients follow: a run's events (`ServeRun`) or the server's
    run starts and ends (`RunNews`)."""

    @property
    def finished(self) -> bool: ...
    def frames(self, position: int) -> tuple[list[bytes], int]: ...
    def attach(self) -> asyncio.Event: ...
    def detach(self, waker: asyncio.Event) -> None: ...


def resume_position(last_event_id: str | None, after: str | None) -> int:
    """How many events the client has already seen (0: none). Raises ValueError if unreadable."""
    raw = last_event_id if last_event_id not in (None, "") else after
    if raw in (None, ""):
        return 0
    position = int(str(raw).strip())
    if position < 0:
        raise ValueError(raw)
    return position


async def event_stream(run: FrameSource, seen: int, *, keepalive: float = KEEPALIVE
                       ) -> AsyncIterator[bytes]:
    """The SSE bytes for one client, from event `seen + 1` on, until the log has ended."""
    waker = run.attach()
    try:
        yield f"retry: {RETRY_MS}\n\n".encode()
        position = min(seen, run.frames(seen)[1])
        while True:
            new, end = run.frames(position)
            if new:
                for piece in _writes(new):
                    yield piece
                position = end
                continue
            if run.finished:
                return
            waker.clear()
            if run.frames(position)[0] or run.finished:
                continue
            try:
                await asyncio.wait_for(waker.wait(), keepalive)
            except TimeoutError:
                yield b": keep-alive\n\n"
    finally:
        run.detach(waker)


def _writes(frames: list[bytes]) -> Iterator[bytes]:
    """`frames` as writes of up to `WRITE_BYTES` each: frames are joined (few writes for many
    small ones keep many clients and chatty runs cheap) and a larger frame is cut (SSE is a
    byte stream: the client puts it together again)."""
    batch: list[bytes] = []
    size = 0
    for frame in frames:
        if size + len(frame) > WRITE_BYTES and batch:
            yield b"".join(batch)
            batch, size = [], 0
        if len(frame) > WRITE_BYTES:
            view = memoryview(frame)
            for start in range(0, len(frame), WRITE_BYTES):
                yield bytes(view[start:start + WRITE_BYTES])
            continue
        batch.append(frame)
        size += len(frame)
    if batch:
        yield b"".join(batch)
