"""The shared client keeps its connections until they are closed or found dead (issue 31 item 3:
no connection churn): TCP keepalive finds a silently dead connection, not an idle limit."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import struct
import time
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from loopwright import Agent
from loopwright.endpoints.base import SHARD_CONNECTIONS
from loopwright.endpoints.keepalive import (
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE,
    KEEPALIVE_INTERVAL,
    keepalive_socket_options,
)
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, RecordedRequest, Reply
from shared_helpers import OpenedConnections, wait_until

OLD_IDLE_LIMIT = 60.0  # seconds: what the shared client kept an idle connection before


def idle_for(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Move the clock httpcore measures a connection's idleness with (not the loop's)."""
    import httpcore._async.http11 as http11

    monkeypatch.setattr(http11, "time",
                        SimpleNamespace(monotonic=lambda: time.monotonic() + seconds))


def tcp_option(transport: asyncio.BaseTransport, name: str) -> int:
    sock = transport.get_extra_info("socket")
    return int(sock.getsockopt(socket.IPPROTO_TCP, getattr(socket, name)))


def keepalive_on(transport: asyncio.BaseTransport) -> bool:
    sock = transport.get_extra_info("socket")
    return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE))


def readable_or_closed(transport: asyncio.BaseTransport) -> bool:
    """Whether the kernel has told the client's socket its connection ended (an end of file or
    an error to read), or the client has closed it already."""
    sock = transport.get_extra_info("socket")
    if transport.is_closing() or sock.fileno() < 0:
        return True
    poll = select.poll()
    poll.register(sock.fileno(), select.POLLIN)
    return bool(poll.poll(0))


def retries(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, StatusEvent) and e.kind == "retrying"]


async def test_every_connection_the_shared_client_opens_probes_an_idle_peer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    opened = OpenedConnections(monkeypatch)
    with FakeModelServer(handler=lambda r: Reply("done")) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False) as agent:
            assert (await agent.run("one")).output == "done"
            # the run's (the server-kind probe before it asks for its connection to be closed)
            transports = opened.open_to(server.port)
            assert transports
            for transport in transports:  # read on the live socket
                assert keepalive_on(transport)
                if hasattr(socket, "TCP_KEEPIDLE"):
                    assert tcp_option(transport, "TCP_KEEPIDLE") == KEEPALIVE_IDLE
                    assert tcp_option(transport, "TCP_KEEPINTVL") == KEEPALIVE_INTERVAL
                    assert tcp_option(transport, "TCP_KEEPCNT") == KEEPALIVE_COUNT
                if hasattr(socket, "TCP_USER_TIMEOUT"):  # none: zero-window probes honour it
                    assert tcp_option(transport, "TCP_USER_TIMEOUT") == 0


async def test_a_users_own_client_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    # `Agent(http_client=)` is the user's: its sockets get none of the shared client's options
    opened = OpenedConnections(monkeypatch)
    with FakeModelServer(handler=lambda r: Reply("done")) as server:
        async with httpx.AsyncClient() as own, Agent(
                "m", base_url=server.base_url, api_key="k", stream=False,
                http_client=own) as agent:
            assert (await agent.run("one")).output == "done"
            model_connections = [t for t in opened.open_to(server.port) if not keepalive_on(t)]
            assert model_connections  # the run's, on the user's client


@pytest.fixture
def fresh_options() -> Iterator[None]:
    keepalive_socket_options.cache_clear()
    yield
    keepalive_socket_options.cache_clear()


def test_a_platform_without_linux_names_gets_what_it_has(
        monkeypatch: pytest.MonkeyPatch, fresh_options: None) -> None:
    # macOS names the idle time TCP_KEEPALIVE; a platform with none of the TCP names still
    # turns keepalive on, with the system's own timings
    monkeypatch.delattr(socket, "TCP_KEEPIDLE", raising=False)
    monkeypatch.setattr(socket, "TCP_KEEPALIVE", 0x10, raising=False)
    options = keepalive_socket_options()
    assert (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1) in options
    assert (socket.IPPROTO_TCP, 0x10, KEEPALIVE_IDLE) in options

    keepalive_socket_options.cache_clear()
    for name in ("TCP_KEEPALIVE", "TCP_KEEPINTVL", "TCP_KEEPCNT"):
        monkeypatch.delattr(socket, name, raising=False)
    assert keepalive_socket_options() == ((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),)


async def test_a_connection_idle_for_an_hour_is_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before, one idle past 60 s was replaced as the next request reached its pool, though it
    # worked. Now a dead one is found by its socket (keepalive), so idleness alone replaces none.
    opened = OpenedConnections(monkeypatch)
    with FakeModelServer(handler=lambda r: Reply("done")) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False) as agent:
            await agent.run("first")
            after_first = opened.count
            idle_for(monkeypatch, OLD_IDLE_LIMIT / 2)
            assert (await agent.run("half a minute later")).output == "done"
            idle_for(monkeypatch, 3600)
            assert (await agent.run("an hour later")).output == "done"
    assert opened.count == after_first  # reused, both times


async def test_runs_in_waves_an_idle_gap_apart_open_no_new_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the churn at 10,000 runs, replayed: a wave of runs fills several pools, the pools sit idle
    # past the old limit, and the next wave reopened every connection it reached (at 10,000
    # runs: 93 opened, at most 84 open at once). Each wave is held at the server until all of
    # it has arrived, so both waves need the same connections.
    wave = 3 * SHARD_CONNECTIONS
    arrived = 0
    wave_in = [asyncio.Event(), asyncio.Event()]

    async def handler(request: RecordedRequest) -> Reply:
        nonlocal arrived
        arrived += 1
        this_wave = wave_in[(arrived - 1) // wave]
        if arrived % wave == 0:
            this_wave.set()
        with contextlib.suppress(TimeoutError):  # a deadline, so a failure ends the test
            await asyncio.wait_for(this_wave.wait(), 20)
        return Reply("done")

    opened = OpenedConnections(monkeypatch)
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", stream=False,
                         callbacks=[events.append]) as agent:
            first = await asyncio.gather(*(agent.run(f"first {i}") for i in range(wave)))
            after_first = opened.count
            idle_for(monkeypatch, OLD_IDLE_LIMIT + 1)
            second = await asyncio.gather(*(agent.run(f"second {i}") for i in range(wave)))
    assert [r.output for r in first + second] == ["done"] * 2 * wave
    assert after_first >= wave
    assert opened.count == after_first  # before: 30 more, every connection replaced
    assert retries(events) == []


class Relay:
    """A TCP relay on 127.0.0.1 in front of the fake model server, so a test can close or reset
    the client's side of a connection as a server, or a dead network, would."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.client_sides: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self.client_sides:
            writer.transport.abort()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def end_all(self, *, reset: bool) -> None:
        """Close every client connection: with a FIN, or with a RST (`SO_LINGER` 0), which
        leaves the client's socket an error pending — as unanswered keepalive probes do."""
        for writer in self.client_sides:
            if writer.transport.is_closing():  # the server-kind probe's, closed at its request
                continue
            if reset:
                writer.get_extra_info("socket").setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
            else:
                writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.client_sides.append(writer)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except ConnectionError:
        pass
    finally:
        sink.close()


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
async def test_a_connection_ended_while_idle_is_replaced_before_reuse(
        monkeypatch: pytest.MonkeyPatch, reset: bool) -> None:
    # the other side of keeping connections: one the server closed, or one the kernel gave up
    # (a pending error, here a reset), is noticed before a request is sent on it — no request
    # fails, none is retried — and only it is replaced
    opened = OpenedConnections(monkeypatch)
    events: list[Event] = []
    with FakeModelServer(handler=lambda r: Reply("done")) as server:
        async with Relay(server.port) as relay, Agent(
                "m", base_url=f"http://127.0.0.1:{relay.port}/v1", api_key="k", stream=False,
                callbacks=[events.append]) as agent:
            assert (await agent.run("first")).output == "done"
            ended = opened.to_port(relay.port)
            relay.end_all(reset=reset)
            await wait_until(lambda: all(map(readable_or_closed, ended)),
                             "the client's sockets saw their connections end")
            assert (await agent.run("after")).output == "done"
            assert len(opened.to_port(relay.port)) == len(ended) + 1
            assert (await agent.run("again")).output == "done"
            assert len(opened.to_port(relay.port)) == len(ended) + 1  # the new one is kept
    assert retries(events) == []
