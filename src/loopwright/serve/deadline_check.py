"""The start-up check that uvicorn still lets `serve/limits.py` enforce its deadlines.

`HeadTimedH11` overrides methods of uvicorn's `H11Protocol` and reads its `conn`, `transport` and
`loop`: none of it is public, and an upgrade that renamed one, or read sockets another way
(`BufferedProtocol`), would leave every connection without a deadline and nothing said. So
before the first server starts, one connection of the class is driven on a private event loop
over an in-memory transport — no socket — through a head that stops half-way and a body that
stops half-way, with deadlines of a few milliseconds; each must close it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from loopwright.errors import ConfigError

_CHECKED: set[type[asyncio.Protocol]] = set()  # classes that passed, so the check runs once
_LATE_REQUESTS = {
    "head": b"GET / HTTP/1.1\r\nHost: check\r\nX-Late: ",
    "body": b"POST / HTTP/1.1\r\nHost: check\r\nContent-Length: 10\r\n\r\n12345",
}
_DEADLINE = 0.01  # seconds, for the check's connections
_WAIT = 0.5  # seconds the check waits for each to be closed


class DeadlinesMissing(ConfigError):
    """The installed uvicorn no longer lets the server cut off late heads or bodies."""


def require_deadlines(protocol: type[asyncio.Protocol]) -> None:
    """Raise `DeadlinesMissing` unless `protocol` (a `HeadTimedH11` class) closes a connection
    whose head, and one whose body, is late. Runs on a thread of its own (the caller may be on
    a running event loop); about 20 ms, once per class and process."""
    if protocol in _CHECKED:
        return
    failed: list[str] = []
    checker = threading.Thread(target=lambda: failed.extend(_late_parts_kept_open(protocol)),
                               name="loopwright-deadline-check")
    checker.start()
    checker.join()
    if failed:
        import uvicorn

        raise DeadlinesMissing(
            f"uvicorn {uvicorn.__version__} no longer lets loopwright cut off a late request "
            f"{' or '.join(failed)} (serve/limits.py overrides its private H11Protocol): "
            "refusing to serve without it; install the uvicorn version loopwright was tested "
            "with (pip install 'uvicorn<0.55') or a loopwright that supports this one")
    _CHECKED.add(protocol)


def _late_parts_kept_open(protocol: type[asyncio.Protocol]) -> list[str]:
    """The parts ("head", "body") whose late arrival did not close the connection."""
    loop = asyncio.new_event_loop()
    try:
        return [part for part, request in _LATE_REQUESTS.items()
                if not loop.run_until_complete(_closed_when_late(protocol, request))]
    except Exception as exc:  # uvicorn's class changed shape (another constructor, say)
        return [f"head or body (the check could not drive a connection: {exc!r})"]
    finally:
        loop.close()


async def _closed_when_late(protocol: type[asyncio.Protocol], request: bytes) -> bool:
    import uvicorn
    from uvicorn.server import ServerState

    from loopwright.serve.limits import ConnectionLimits, timed_protocol

    config = uvicorn.Config(_read_until_gone, log_config=None, lifespan="off")
    limits = ConnectionLimits(head_timeout=_DEADLINE, body_timeout=_DEADLINE)
    timed: Any = timed_protocol(limits) if _is_timed(protocol) else protocol
    connection = timed(config=config, server_state=ServerState(), app_state={},
                       _loop=asyncio.get_running_loop())
    wire = _MemoryTransport(connection)
    connection.connection_made(wire)
    connection.data_received(request)
    for _ in range(int(_WAIT / _DEADLINE)):
        if wire.closed.is_set():
            break
        await asyncio.sleep(_DEADLINE)
    cut_off = wire.closed.is_set()
    wire.close()  # (if it was not) so the request's task ends before the loop does
    for _ in range(10):
        await asyncio.sleep(0)
    return cut_off


def _is_timed(protocol: type[asyncio.Protocol]) -> bool:
    from loopwright.serve.limits import HeadTimedH11

    return issubclass(protocol, HeadTimedH11)


async def _read_until_gone(scope: Any, receive: Any, send: Any) -> None:
    """The check's app: reads the body until the connection goes."""
    while (await receive())["type"] != "http.disconnect":
        pass


class _MemoryTransport(asyncio.Transport):
    """A transport with no socket: records whether the protocol closed it."""

    def __init__(self, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self._protocol = protocol
        self.closed = asyncio.Event()
        self.written = b""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 8765) if name in ("sockname", "peername") else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed.is_set()

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        asyncio.get_running_loop().call_soon(self._protocol.connection_lost, None)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass
