"""What slow or greedy clients may hold of the server (`serve/limits.py`), over real sockets:
heads and bodies sent a byte at a time, more of them than the process has file descriptors,
bodies the server refuses; and the start-up check that the deadlines still work."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import TOKEN, MakeServer, agent_options, serve_in_thread, serve_process
from uvicorn.protocols.http.h11_impl import H11Protocol

from loopwright.serve.app import ServeOptions
from loopwright.serve.deadline_check import DeadlinesMissing, require_deadlines
from loopwright.serve.limits import ConnectionLimits, HeadTimedH11
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import closed_by_the_server

SLOW_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
HANG_GUARD = 60.0
"""Seconds a test waits for a deadline to cut a client off: a safety net only. The deadlines
under test are set well below it, and the clients would go on for hours without them."""


@contextlib.contextmanager
def slow_clients(url: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that each sent the start of a request's head and then nothing."""
    host, port = url.removeprefix("http://").split(":")
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            connection = socket.create_connection((host, int(port)), timeout=5)
            connection.sendall(SLOW_HEAD)
            sockets.append(connection)
        yield sockets
    finally:
        for connection in sockets:
            connection.close()


def closed_by_server(connection: socket.socket, within: float) -> bool:
    connection.settimeout(within)
    try:
        return connection.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def trickled_until_closed(connection: socket.socket, start: bytes = b"") -> bool:
    """`start`, then `x` for ever, sent a byte at a time, each followed by up to 0.1 s waiting
    for the server to close: whether it did before `HANG_GUARD` seconds."""
    guard = time.monotonic() + HANG_GUARD
    sending = iter(start)
    while time.monotonic() < guard:
        with contextlib.suppress(OSError):
            connection.sendall(bytes([next(sending, ord("x"))]))
        if closed_by_server(connection, within=0.1):
            return True
    return False


def test_a_slowloris_does_not_keep_a_client_out_of_a_real_server(tmp_path: Path) -> None:
    # uvicorn has no time limit for a request's head (its keep-alive timer starts over at each
    # byte): connections that never finished theirs held every file descriptor the process
    # had, and a client sending a whole request was never accepted
    with FakeModelServer([]) as fake, serve_process(
            "--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
            "--workdir", str(tmp_path), max_open_files=160) as served, \
            slow_clients(served.url, 240) as attackers:
        closed_before = len(closed_by_the_server(attackers))
        health = httpx.get(f"{served.url}/health", timeout=HANG_GUARD,
                           headers={"authorization": f"Bearer {TOKEN}"})
        assert health.status_code == 200
        # not held out: room was made by closing the connections waiting longest (those the
        # server was still catching up on, at most its backlog), where a client held out gets
        # in only once the head deadline (10 s) has closed every slow one it accepted
        closed = closed_by_the_server(attackers)
        assert len(closed) - closed_before < len(attackers) // 4, (closed_before, len(closed))
        assert attackers[0] in closed  # the longest waiting were let go for the newer ones


def test_a_head_that_does_not_arrive_in_time_is_cut_off_but_slow_answers_are_not(
        make_server: MakeServer, tmp_path: Path) -> None:
    limits = ConnectionLimits(head_timeout=0.5)
    with FakeModelServer([]) as fake, serve_in_thread(
            ServeOptions(token=TOKEN, agent_options=agent_options(fake, tmp_path),
                         keepalive=0.2), limits) as served:
        connecting = time.monotonic()  # the deadline starts once the server has accepted
        with slow_clients(served.url, 1) as (trickling,):
            # a byte at a time, every 0.1 s: uvicorn's own timer starts over at each
            assert trickled_until_closed(trickling)
        assert time.monotonic() - connecting >= limits.head_timeout  # not cut off before it
        # must not fire: a stream that outlives the deadline, and a kept-alive connection
        # whose next request comes in time
        with served.api.stream("GET", "/runs/news") as news:
            lines = news.iter_lines()
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                assert next(lines) is not None  # keep-alive comments keep coming
        with httpx.Client(base_url=served.url, timeout=5,
                          headers={"authorization": f"Bearer {TOKEN}"}) as client:
            ends = set()
            for _ in range(4):  # 0.6 s and more on one connection, past the head deadline
                response = client.get("/health")
                assert response.status_code == 200
                ends.add(response.extensions["network_stream"].get_extra_info("client_addr"))
                time.sleep(0.2)  # (each next request well within the deadline)
            assert len(ends) == 1


def test_a_refused_body_is_not_read_on_for_ever(make_server: MakeServer) -> None:
    # uvicorn went on reading and dropping the body of a request already answered 401 or 413
    # for as long as the client sent, on one connection
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        host, port = served.url.removeprefix("http://").split(":")
        heads = [b"POST /runs HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n",
                 b"POST /runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                 + b"\r\nContent-Length: 50000000\r\n\r\n"]
        for head in heads:
            with socket.create_connection((host, int(port)), timeout=5) as connection:
                connection.sendall(head + b"x" * 65536)
                answer = connection.recv(65536)
                assert answer.split(b" ")[1] in (b"401", b"413"), answer
                assert b"connection: close" in answer.lower()
                sent = 0
                with contextlib.suppress(OSError):
                    while sent < 20_000_000:
                        connection.sendall(b"x" * 65536)
                        sent += 65536
                assert sent < 20_000_000  # the server hung up instead of reading it all
        # must not fire: a refused GET with no body keeps its connection
        with httpx.Client(base_url=served.url, timeout=5) as anonymous:
            response = anonymous.get("/health")
            assert response.status_code == 401 and "connection" not in response.headers


def _served_with(fake: FakeModelServer, tmp_path: Path, limits: ConnectionLimits) -> Any:
    return serve_in_thread(ServeOptions(token=TOKEN, agent_options=agent_options(fake, tmp_path),
                                        leave_grace=0.5), limits)


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def _answer(connection: socket.socket, within: float) -> bytes:
    """What the server sent until it closed the connection (or `within` seconds passed)."""
    connection.settimeout(within)
    answer = b""
    with contextlib.suppress(TimeoutError, ConnectionResetError):
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_a_body_trickled_with_the_token_is_cut_off_but_a_large_one_on_time_is_read(
        tmp_path: Path) -> None:
    # Only the head had a deadline: a client with the token sending its body a byte at a time
    # held its connection (and a handler waiting for the body) for as long as it liked
    limits = ConnectionLimits(body_timeout=1.0)
    head = (b"POST /runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n")
    with FakeModelServer([Reply("ok")]) as fake, _served_with(fake, tmp_path, limits) as served:
        with _connect(served.url) as trickling:
            # a byte every 0.1 s: 28 hours for the whole body
            sending_head = time.monotonic()  # the deadline starts once the head has arrived
            trickling.sendall(head % 1_000_000)
            assert trickled_until_closed(trickling, b'{"prompt": "')
        assert time.monotonic() - sending_head >= limits.body_timeout  # not cut off before it
        # must not fire: the largest body the API takes, sent in pieces within the deadline
        large = b'{"prompt": "' + b"y" * 990_000 + b'"}'
        with _connect(served.url) as uploading:
            uploading.sendall(head % len(large))
            for start in range(0, len(large), 100_000):
                uploading.sendall(large[start:start + 100_000])
                time.sleep(0.01)  # pieces apart, well within the deadline
            answer = _answer(uploading, within=HANG_GUARD).split(b"\r\n", 1)[0]
        assert answer == b"HTTP/1.1 201 Created", answer


def test_the_answer_to_a_late_body_is_408_when_nothing_was_answered(tmp_path: Path) -> None:
    limits = ConnectionLimits(body_timeout=0.5)
    with FakeModelServer([]) as fake, _served_with(fake, tmp_path, limits) as served, \
            _connect(served.url) as late:
        late.sendall(b"POST /runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                     + b"\r\nContent-Length: 50\r\n\r\n{")
        answer = _answer(late, within=HANG_GUARD)
        assert served.api.get("/runs").json()["runs"] == []  # and no run was started
    assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive" in answer


def test_after_a_body_that_outlasted_its_answer_the_next_head_still_has_a_deadline(
        tmp_path: Path) -> None:
    # A page file is answered without reading a body; when that body then ended, uvicorn began
    # the next request with no timer at all (its keep-alive timer stopped at the body's first
    # byte, and the head deadline is set again only when an answer completes), so the next head
    # could come a byte a minute for ever, without the token
    limits = ConnectionLimits(head_timeout=0.5)
    with FakeModelServer([]) as fake, _served_with(fake, tmp_path, limits) as served, \
            _connect(served.url) as connection:
        connection.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n")
        connection.settimeout(HANG_GUARD)
        assert connection.recv(65536).startswith(b"HTTP/1.1 200 ")
        connection.sendall(b"x")  # the body's last byte, after its answer
        assert trickled_until_closed(connection, SLOW_HEAD)


def test_serve_refuses_a_uvicorn_whose_protocol_would_not_cut_off_late_requests() -> None:
    # The deadlines override uvicorn's private H11Protocol: a uvicorn that no longer calls the
    # overridden methods is, for this check, uvicorn's own class, which has neither deadline
    with pytest.raises(DeadlinesMissing, match="late request head or body"):
        require_deadlines(H11Protocol)
    # must not fire: the class every server of this process runs with (checked, as above, by a
    # slow head and a slow body over real sockets)
    require_deadlines(HeadTimedH11)
    assert issubclass(ConnectionLimits().uvicorn_config()["http"], HeadTimedH11)
