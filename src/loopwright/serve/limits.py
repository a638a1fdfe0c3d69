"""What one client may hold of the server: connections, time to send a request's head and body,
their size.

uvicorn gives no time limit for a request's line and headers to arrive (its keep-alive timer
starts over on every byte), so clients sending headers a byte a minute ("slowloris") would each
hold a file descriptor for ever, and enough of them would leave none to accept anyone else. Here
a connection whose head has not arrived `head_timeout` seconds after it opened (or after its last
answer) is closed, and when more than `max_waiting_heads` connections are waiting for theirs, the
one waiting longest is closed: a client sending its request at once always gets in. A request's
body must have arrived `body_timeout` seconds after its head (else 408 and the connection
closes): uvicorn has no limit on that either, and a client with the token sending a body a byte a
minute held its connection for ever.

The deadlines live in a subclass of uvicorn's `H11Protocol`, a class uvicorn does not promise to
keep (0.54 has no public hook for either deadline). So that an upgrade cannot silently drop them,
the first server a process starts drives one connection of the subclass through a late head and
a late body on a private event loop, and refuses to start (`DeadlinesMissing`) unless each was
cut off (`serve/deadline_check.py`).

The limits are made to fit the process's file-descriptor limit (`ConnectionLimits.fitting`):
accepting with no descriptor left fails, and asyncio logs a traceback for every attempt, which
a flood of connections turns into megabytes of errors.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_BODY = 1_000_000
"""The largest request body the API reads (bytes); a larger one is answered 413."""
SLOWEST_LINK = 8 * 1024
"""Bytes a second of the slowest link a body is allowed for (a poor mobile connection)."""


def body_deadline(max_body: int, slowest_link: int = SLOWEST_LINK) -> float:
    """Seconds a request body may take to arrive after its head: the largest body the endpoint
    accepts (`max_body` bytes), sent over the slowest link it is sized for."""
    return max_body / slowest_link


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    """The limits `loopwright serve` runs with (docs/guide.md, "Limits")."""

    head_timeout: float = 10.0
    """Seconds a request's line and headers may take to arrive."""
    max_waiting_heads: int = 64
    """Connections waiting for a request's head at once; beyond, the oldest is closed."""
    max_concurrency: int = 512
    """Connections and requests in progress before new requests are answered 503 (uvicorn's
    `limit_concurrency`); each browser tab holds up to two event streams."""
    keep_alive: int = 5
    """Seconds an idle connection is kept open between requests (uvicorn's default)."""
    body_timeout: float = body_deadline(MAX_BODY)
    """Seconds a request's body may take to arrive after its head: serve's largest body on the
    slowest link (about 2 minutes); `fitting(max_body=…)` sizes it for another endpoint's."""
    max_head_bytes: int = 16 * 1024
    """The largest request head (line and headers); beyond it the answer is 400."""
    backlog: int = 128
    """Connections the kernel queues for accepting, and the most accepted in one go."""

    @classmethod
    def fitting(cls, open_files: int | None = None, *, max_body: int = MAX_BODY,
                slowest_link: int = SLOWEST_LINK) -> ConnectionLimits:
        """The defaults, smaller where the process may open fewer files (`open_files`, else its
        `RLIMIT_NOFILE`) than they would take, with room kept for its own files; the body
        deadline sized for an endpoint that accepts bodies of up to `max_body` bytes."""
        if open_files is None:
            open_files = _open_files_allowed()
        spare = max(open_files - RESERVED_FILES, 16)
        default = cls()
        return cls(max_waiting_heads=min(default.max_waiting_heads, spare // 8),
                   backlog=min(default.backlog, spare // 8),
                   max_concurrency=min(default.max_concurrency, spare // 2),
                   body_timeout=body_deadline(max_body, slowest_link))

    def uvicorn_config(self) -> dict[str, Any]:
        """`uvicorn.Config` keyword arguments for these limits. Raises `DeadlinesMissing` when
        the installed uvicorn no longer lets the deadlines work."""
        from loopwright.serve.deadline_check import require_deadlines

        require_deadlines(HeadTimedH11)
        return {"http": timed_protocol(self), "limit_concurrency": self.max_concurrency,
                "timeout_keep_alive": self.keep_alive,
                "h11_max_incomplete_event_size": self.max_head_bytes, "backlog": self.backlog}


RESERVED_FILES = 32
"""Descriptors kept for the server's own files: the session store, model connections, logs."""


def _open_files_allowed() -> int:
    try:
        import resource
    except ImportError:  # Windows: no such limit to fit
        return 1 << 20
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def timed_protocol(limits: ConnectionLimits) -> type[HeadTimedH11]:
    """uvicorn's h11 protocol with the deadlines; one class per server, as the connections
    waiting for a head are counted per server."""
    waiting: dict[HeadTimedH11, None] = {}  # oldest first

    class ServerHeadTimedH11(HeadTimedH11):
        pass

    ServerHeadTimedH11.limits = limits
    ServerHeadTimedH11.waiting = waiting
    return ServerHeadTimedH11


class HeadTimedH11(H11Protocol):
    """A connection that is closed when a request's head or body is late (see the module's
    text)."""

    limits: ConnectionLimits
    waiting: dict[HeadTimedH11, None]
    _head_deadline: asyncio.TimerHandle | None = None
    _body_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        self._body_arrived()
        super().connection_lost(exc)

    def _follow_request(self) -> None:
        """Arm or settle the deadlines for where the client's side of the exchange now is. A
        body that ends after its answer was sent starts the next request's wait here: uvicorn
        begins that cycle without calling `on_response_complete` (and had stopped its own
        keep-alive timer at the body's first byte), so the connection waited without any."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._head_deadline is None:
                self._await_head()
        else:
            self._head_arrived()
        if state is h11.SEND_BODY:
            if self._body_deadline is None:
                self._body_deadline = self.loop.call_later(self.limits.body_timeout,
                                                           self._body_late)
        else:
            self._body_arrived()

    def _await_head(self) -> None:
        self._head_arrived()
        self.waiting[self] = None
        self._head_deadline = self.loop.call_later(self.limits.head_timeout, self._close)
        while len(self.waiting) > self.limits.max_waiting_heads:
            next(iter(self.waiting))._close()

    def _head_arrived(self) -> None:
        self.waiting.pop(self, None)
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _body_arrived(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _body_late(self) -> None:
        """408 when nothing was answered yet (the handler still waits for the body), then the
        connection closes; the handler is told the client left."""
        self._body_deadline = None
        if self.conn.our_state is h11.SEND_RESPONSE:
            text = (b'{"error":"the request body did not arrive within %d s"}'
                    % self.limits.body_timeout)
            head = h11.Response(status_code=408, reason=b"Request Timeout", headers=[
                (b"content-type", b"application/json"), (b"connection", b"close"),
                (b"content-length", b"%d" % len(text))])
            with contextlib.suppress(h11.LocalProtocolError):
                for event in (head, h11.Data(data=text), h11.EndOfMessage()):
                    self.transport.write(self.conn.send(event) or b"")
        self._close()

    def _close(self) -> None:
        self._head_arrived()
        self._body_arrived()
        self.transport.close()
