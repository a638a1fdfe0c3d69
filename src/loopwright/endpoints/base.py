"""An endpoint: base URL, key, headers — and the one shared `httpx.AsyncClient` per event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

import httpx

_VERSION_SEGMENT = re.compile(r"^v\d+[a-z0-9]*$")

DEFAULT_MAX_CONNECTIONS = 500
MAX_CONNECTIONS_ENV = "LOOPWRIGHT_MAX_CONNECTIONS"


def max_connections() -> int:
    """The shared client's connection pool size (`LOOPWRIGHT_MAX_CONNECTIONS`, default 500)."""
    raw = os.environ.get(MAX_CONNECTIONS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_CONNECTIONS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{MAX_CONNECTIONS_ENV}={raw!r} is not a positive whole number; "
                         f"set it to the number of connections to keep (default "
                         f"{DEFAULT_MAX_CONNECTIONS}) or unset it")
    return value


def normalize_base_url(url: str) -> str:
    """Accept a base URL with or without its `/v1`; return it with the version segment."""
    url = url.strip().rstrip("/")
    if not url:
        return url
    for suffix in ("/chat/completions", "/messages", "/responses"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    parsed = httpx.URL(url)
    last = parsed.path.rstrip("/").rsplit("/", 1)[-1]
    if _VERSION_SEGMENT.match(last) or last == "openai":
        return url
    return url + "/v1"


@dataclass(kw_only=True)
class Endpoint:
    """Where requests go and how they are authenticated."""

    base_url: str
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    name: str = ""
    auth_header: str = "authorization"  # "x-api-key" for Anthropic

    def __post_init__(self) -> None:
        self.base_url = normalize_base_url(self.base_url)

    def url(self, path: str) -> str:
        return self.base_url + path

    def request_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", **self.headers}
        if self.api_key:
            if self.auth_header == "authorization":
                headers["authorization"] = f"Bearer {self.api_key}"
            else:
                headers[self.auth_header] = self.api_key
        return headers

    @property
    def is_local(self) -> bool:
        host = httpx.URL(self.base_url).host
        return host in {"localhost", "127.0.0.1", "::1", "0.0.0.0"} or host.endswith(".local")


class _LoopClient:
    """The shared client of one event loop, who holds it, and the hook that closes it when the
    loop finishes (`asyncio.run` and `asyncio.Runner` close every async generator of their loop
    before closing it, so a parked generator is our "loop is ending" callback)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        size = max_connections()
        # the limits go to the transport: a client given its own transport ignores `limits=`
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=min(size, 200))
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=None),
            transport=httpx.AsyncHTTPTransport(retries=0, limits=limits),
            follow_redirects=True,
        )
        # Never more requests in flight than the pool holds: the rest wait here, without a
        # timeout, instead of in httpcore's pool (a timed wait that scans every queued request)
        self.gate = asyncio.Semaphore(size)
        self.holders: weakref.WeakSet[object] = weakref.WeakSet()
        self._closer = self._close_when_loop_ends(loop)
        step = self._closer.asend(None)  # run to its `yield`: registers it with the loop
        with contextlib.suppress(StopIteration):
            step.send(None)

    async def _close_when_loop_ends(self, loop: asyncio.AbstractEventLoop
                                    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if _clients.get(loop) is self:
                del _clients[loop]  # the client's sockets refer to the loop: drop both
            await self.client.aclose()

    async def close(self) -> None:
        """Close now (its last holder let go); the same path as the loop's end."""
        await self._closer.aclose()


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = (
    weakref.WeakKeyDictionary()
)


def _loop_client() -> _LoopClient:
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is None or entry.client.is_closed:
        entry = _clients[loop] = _LoopClient(loop)
    return entry


def shared_client() -> httpx.AsyncClient:
    """The process's HTTP client for the running event loop (connections are reused across runs).

    It is closed when its loop finishes (`asyncio.run`, `asyncio.Runner`), or earlier when the
    last holder (`hold_shared_client`) lets go of it. httpx retries nothing by default
    (`retries=0` on the transport): ours is the only retry layer.
    """
    return _loop_client().client


@contextlib.asynccontextmanager
async def request_slot(own: httpx.AsyncClient | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """The shared client, once one of its connections is free for this request (or `own`, the
    user's client given as `Agent(http_client=)`, as it is: its pool and limits are the user's).

    The wait has no timeout and is local: it is no provider's failure and no retry attempt.
    """
    if own is not None:
        yield own
        return
    entry = _loop_client()
    async with entry.gate:
        yield entry.client


def hold_shared_client(holder: object) -> None:
    """`holder` (an `Agent`) uses the running loop's client until `release_shared_client`."""
    _loop_client().holders.add(holder)


async def release_shared_client(holder: object) -> None:
    """`holder` is done with the running loop's client; the last holder to go closes it."""
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is None or holder not in entry.holders:
        return
    entry.holders.discard(holder)
    if not entry.holders:
        await entry.close()


async def close_shared_client() -> None:
    """Close the running loop's client (the sync wrappers call this before their loop ends)."""
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is not None:
        await entry.close()
