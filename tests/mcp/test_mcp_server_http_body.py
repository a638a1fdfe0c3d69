"""`loopwright mcp-server --http`'s body deadline, over a real socket: sized for the largest body
the endpoint accepts (4 MiB), not serve's (1 MB). The server runs in this process (its own
thread and event loop) on a fast "slowest link" so the test takes seconds, not minutes: the
deadline is the endpoint's largest body over that link."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from loopwright.mcp.server import MAX_BODY, serve
from loopwright.testing import FakeModelServer

TOKEN = "t" * 32
LINK = 512 * 1024  # bytes a second: the deadline for MAX_BODY is 8 s; for serve's 1 MB, 1.9 s
HANG_GUARD = 120.0


@contextlib.contextmanager
def mcp_http_server(fake: FakeModelServer, workspace: Path) -> Iterator[tuple[str, int]]:
    """`serve(http=True)` on a socket of 127.0.0.1 bound here; cancelled afterwards."""
    listening = socket.create_server(("127.0.0.1", 0))
    options = {"model": "fake-model", "base_url": fake.base_url, "api_key": "test",
               "workdir": str(workspace)}
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = []

    async def main() -> None:
        running.append((asyncio.get_running_loop(), asyncio.current_task()))  # type: ignore[arg-type]
        await serve(options, http=True, token=TOKEN, listening=listening, slowest_link=LINK)

    def run() -> None:  # asyncio.run: what is left of the server's tasks ends with it
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listening.getsockname()
    finally:
        while not running and thread.is_alive():
            time.sleep(0.01)
        for loop, task in running:
            loop.call_soon_threadsafe(task.cancel)
        thread.join(30)
        listening.close()


def post_head(address: tuple[str, int], length: int) -> socket.socket:
    connection = socket.create_connection(address, timeout=HANG_GUARD)
    host = f"{address[0]}:{address[1]}"
    connection.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {length}\r\n\r\n".encode())
    return connection


def padded_initialize(size: int) -> bytes:
    """An `initialize` request of `size` bytes (a long client name)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "", "version": "1"}}}
    padding = size - len(json.dumps(request).encode())
    request["params"]["clientInfo"]["name"] = "x" * padding  # type: ignore[index]
    return json.dumps(request).encode()


def status_of(connection: socket.socket) -> int:
    """The answer's status; 0 when the server closed without one."""
    answer = b""
    with contextlib.suppress(ConnectionResetError):
        while b"\r\n" not in answer:
            chunk = connection.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def test_a_large_body_over_the_slowest_link_arrives_and_a_stalled_one_is_cut_off(
        tmp_path: Path) -> None:
    # --http ran with serve's body deadline (1 MB over 8 KiB/s: about 2 minutes) while it reads
    # bodies of up to 4 MiB: a 2 MB tool call over the slowest link allowed for was answered
    # 408 half-way through
    body = padded_initialize(2 * 1024 * 1024)
    with FakeModelServer([]) as fake, mcp_http_server(fake, tmp_path) as address:
        paced = post_head(address, len(body))
        for start in range(0, len(body), LINK // 8):  # an eighth of the link each 1/8 s
            paced.sendall(body[start:start + LINK // 8])
            time.sleep(1 / 8)
        assert status_of(paced) == 200
        paced.close()
        # must still fire: a body that stops half-way is answered 408 and the connection ends
        stalled = post_head(address, MAX_BODY)
        stalled.sendall(body[:1024])
        started = time.monotonic()
        assert status_of(stalled) == 408
        while stalled.recv(65536):  # the rest of the answer, then the server closes
            pass
        assert time.monotonic() - started < HANG_GUARD
        stalled.close()
