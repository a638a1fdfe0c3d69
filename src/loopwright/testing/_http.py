"""A minimal HTTP/1.1 server protocol on plain asyncio.

Just what a model API needs: keep-alive, `Content-Length` request bodies, `Content-Length` JSON
responses and chunked SSE responses. Requests are parsed and answered inside `data_received`
whenever the answer needs no waiting, so the common case costs no task and no thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

logger = logging.getLogger("loopwright.testing")

_MAX_HEAD_BYTES = 64 * 1024
CHUNKED_END = b"0\r\n\r\n"
_REASONS = {status.value: status.phrase for status in HTTPStatus} | {529: "Overloaded"}


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One parsed request."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


@dataclass(frozen=True, slots=True)
class Send:
    """What to write for one request, and when.

    `first` is written after `delay` seconds, `rest` after a further `pause`; with `drop` the
    connection is then closed, even mid-body (how cut streams are simulated).
    """

    first: bytes
    rest: bytes = b""
    delay: float = 0.0
    pause: float = 0.0
    drop: bool = False

    @property
    def immediate(self) -> bool:
        return self.delay <= 0 and self.pause <= 0


App = Callable[[HttpRequest], Send | Awaitable[Send]]


def response_bytes(
    status: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
    keep_alive: bool = True,
) -> bytes:
    """A complete response with `Content-Length` framing."""
    extra = {"content-length": str(len(body))} | dict(headers or {})
    return _head(status, content_type, extra, keep_alive) + body


def stream_head(
    status: int, content_type: str, headers: Mapping[str, str] | None, keep_alive: bool
) -> bytes:
    """The head of a response whose body follows in chunked transfer-encoding."""
    extra = {"transfer-encoding": "chunked", "cache-control": "no-cache"} | dict(headers or {})
    return _head(status, content_type, extra, keep_alive)


def chunked(parts: Iterable[bytes]) -> bytes:
    """Frame each part as one HTTP chunk (no terminating chunk)."""
    return b"".join(b"%x\r\n%b\r\n" % (len(part), part) for part in parts if part)


def _head(status: int, content_type: str, headers: Mapping[str, str], keep_alive: bool) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
        f"content-type: {content_type}",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append("connection: keep-alive" if keep_alive else "connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class HttpConnection(asyncio.Protocol):
    """One client connection: parses requests in order and writes what the app returns."""

    def __init__(self, app: App, registry: set[HttpConnection]) -> None:
        self._app = app
        self._registry = registry
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._head: _Head | None = None
        self._closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._registry.add(self)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._task is None:
            self._serve_buffered()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._registry.discard(self)
        if self._task is not None:
            self._task.cancel()

    def abort(self) -> None:
        """Close at once, discarding anything unsent (used when the server stops)."""
        self._closed = True
        if self._transport is not None:
            self._transport.abort()

    def _serve_buffered(self) -> None:
        # One request at a time: a pipelined request waits until the one before is answered.
        while not self._closed and self._task is None:
            request = self._parse_one()
            if request is None:
                return
            try:
                outcome = self._app(request)
            except Exception:
                logger.exception("fake model server: unhandled error")
                outcome = Send(response_bytes(500, b'{"error":"internal"}', keep_alive=False))
            if not isinstance(outcome, Send) or not outcome.immediate:
                respond = self._respond_later(outcome, request.keep_alive)
                self._task = asyncio.get_running_loop().create_task(respond)
                return
            self._write(outcome, request.keep_alive)

    def _write(self, send: Send, keep_alive: bool) -> None:
        if self._closed or self._transport is None:
            return
        self._transport.write(send.first + send.rest)
        if send.drop or not keep_alive:
            self._close()

    async def _respond_later(self, outcome: Send | Awaitable[Send], keep_alive: bool) -> None:
        try:
            await self._send_later(outcome)
        except Exception:
            logger.exception("fake model server: response failed")
            self.abort()
        finally:
            self._task = None
        # Cancelled (connection lost) never gets here; otherwise go on with the next request.
        if not keep_alive:
            self._close()
        elif not self._closed:
            self._serve_buffered()

    async def _send_later(self, outcome: Send | Awaitable[Send]) -> None:
        send = outcome if isinstance(outcome, Send) else await outcome
        if send.delay > 0:
            await asyncio.sleep(send.delay)
        if send.pause <= 0:
            self._write(Send(send.first + send.rest, drop=send.drop), keep_alive=True)
            return
        self._write(Send(send.first), keep_alive=True)
        await asyncio.sleep(send.pause)
        self._write(Send(send.rest, drop=send.drop), keep_alive=True)

    def _close(self) -> None:
        # Unlike abort(), close() first flushes what was written: a cut stream keeps its events.
        self._closed = True
        if self._transport is not None:
            self._transport.close()

    def _parse_one(self) -> HttpRequest | None:
        """Take one complete request off the buffer; `None` if more bytes are needed."""
        # The head is parsed once and kept while the body is still arriving.
        if self._head is None:
            self._head = self._parse_head()
            if self._head is None:
                return None
        head = self._head
        body_end = head.body_start + head.length
        if len(self._buffer) < body_end:
            return None
        body = bytes(self._buffer[head.body_start : body_end])
        del self._buffer[:body_end]
        self._head = None
        path, _, query = head.target.partition("?")
        return HttpRequest(head.method, path, query, head.headers, body, head.keep_alive)

    def _parse_head(self) -> _Head | None:
        buffer = self._buffer
        while buffer.startswith(b"\r\n"):  # tolerated between keep-alive requests
            del buffer[:2]
        head_end = buffer.find(b"\r\n\r\n")
        if head_end < 0:
            if len(buffer) > _MAX_HEAD_BYTES:
                self._reject(431, "request head too large")
            return None
        try:
            head = _Head.parse(bytes(buffer[:head_end]), body_start=head_end + 4)
        except ValueError:
            self._reject(400, "malformed request")
            return None
        if "chunked" in head.headers.get("transfer-encoding", "").lower():
            self._reject(411, "send a Content-Length body; chunked requests are not supported")
            return None
        return head

    def _reject(self, status: int, message: str) -> None:
        body = f'{{"error":{{"message":"{message}"}}}}'.encode()
        self._write(Send(response_bytes(status, body, keep_alive=False)), keep_alive=False)


@dataclass(frozen=True, slots=True)
class _Head:
    """A parsed request line and headers, and where the body starts in the buffer."""

    method: str
    target: str
    headers: dict[str, str]
    keep_alive: bool
    body_start: int
    length: int

    @classmethod
    def parse(cls, raw: bytes, body_start: int) -> _Head:
        request_line, *header_lines = raw.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ")
        headers: dict[str, str] = {}
        for line in header_lines:
            name, colon, value = line.partition(":")
            if not colon:
                raise ValueError(f"bad header line {line!r}")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if length < 0:
            raise ValueError("negative content-length")
        keep_alive = _keeps_alive(version, headers)
        return cls(method, target, headers, keep_alive, body_start, length)


def _keeps_alive(version: str, headers: Mapping[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if version == "HTTP/1.1":
        return connection != "close"
    return connection == "keep-alive"
