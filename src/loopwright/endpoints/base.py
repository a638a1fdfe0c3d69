"""An endpoint: base URL, key, headers — and the one shared HTTP client per event loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import ssl
import weakref
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from loopwright.endpoints.keepalive import keepalive_socket_options
from loopwright.endpoints.proxies import proxy_mounts

if TYPE_CHECKING:
    import httpx

# httpx (with the stdlib's urllib.request, email and http.cookiejar it pulls in, a fifth of
# `from loopwright import Agent`) is imported by the first request, not with the agent: every
# use below imports it where it runs (a dictionary lookup once it is loaded).

_VERSION_SEGMENT = re.compile(r"^v\d+[a-z0-9]*$")

DEFAULT_MAX_CONNECTIONS = 500
MAX_CONNECTIONS_ENV = "LOOPWRIGHT_MAX_CONNECTIONS"


def max_connections() -> int:
    """Connections of the shared client, all its pools together (`LOOPWRIGHT_MAX_CONNECTIONS`,
    default 500)."""
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
    """Accept a base URL with or without its `/v1`; return it with the version segment (before
    a query string the URL may carry, `?api_key=…`)."""
    url, mark, query = url.strip().partition("?")
    url = url.rstrip("/")
    if not url:
        return url + mark + query
    for suffix in ("/chat/completions", "/messages", "/responses"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    import httpx

    parsed = httpx.URL(url)
    last = parsed.path.rstrip("/").rsplit("/", 1)[-1]
    if not (_VERSION_SEGMENT.match(last) or last == "openai"):
        url += "/v1"
    return url + mark + query


def with_path(base_url: str, path: str) -> str:
    """`path` appended to the path of `base_url`, before its query string: some gateways take
    the key as `?api_key=…` or `?key=…` on every request."""
    base, mark, query = base_url.partition("?")
    return base + path + mark + query


_SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "pwd",
                           "auth", "authorization", "sig", "signature", "credential",
                           "credentials", "session"})


def _secret_name(name: str) -> bool:
    """A query parameter that looks like it carries a credential: a word of its name (split at
    `_`, `-`, `.`) is one of `_SECRET_WORDS` — `api_key`, `x-goog-api-key`, `access_token`, but
    not `keyword` or `monkey`."""
    return bool(_SECRET_WORDS.intersection(re.split(r"[_\-.]", name.lower())))


@functools.lru_cache(maxsize=256)
def shown_url(url: str) -> str:
    """`url` as it may be shown or recorded: user-info (`user:secret@`) replaced by `***`, and
    the value of every secret-looking query parameter (`?api_key=…`). Everything else is kept
    as written."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority_end = min((at for at in (rest.find(c) for c in "/?#") if at >= 0), default=len(rest))
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    path, mark, query = tail.partition("?")
    if mark:
        query, hash_mark, fragment = query.partition("#")
        parts = []
        for part in query.split("&"):
            name, eq, value = part.partition("=")
            parts.append(f"{name}=***" if eq and value and _secret_name(name) else part)
        query = "&".join(parts) + hash_mark + fragment
    return f"{scheme}{sep}{authority}{path}{mark}{query}"


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
        return with_path(self.base_url, path)

    @property
    def shown_url(self) -> str:
        """The base URL as errors, events and records show it: no credentials in it."""
        return shown_url(self.base_url)

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
        return _is_local_url(self.base_url)


# by base URL: asked again for every run (its settings), and parsing the URL is ~900 bytecodes
@functools.lru_cache(maxsize=256)
def _is_local_url(base_url: str) -> bool:
    import httpx

    host = httpx.URL(base_url).host
    return host in {"localhost", "127.0.0.1", "::1", "0.0.0.0"} or host.endswith(".local")


SHARD_CONNECTIONS = 10
"""Connections per pool of the shared client. httpcore 1.0 walks every connection of a pool
whenever a request starts or ends there — for each idle one, every connection again — so the
walk grows with the square of a pool's connections; and connections are kept (`KEEP_ALIVE`), so
a burst leaves a pool at its peak. One pool of 500 spent ~38 % of the client's CPU at 10,000
concurrent runs; at 50 runs, a burst left a pool of 100 holding 50 connections that every later
request walked. Small pools, filled first to last (`_LoopClient.free_shard`), bound each walk by
the pool's size, and the pools the concurrency in use does not reach are never walked."""


def shard_sizes(total: int) -> list[int]:
    """`total` connections split into pools of at most `SHARD_CONNECTIONS`, as even as can be."""
    count = -(-total // SHARD_CONNECTIONS)
    size, extra = divmod(total, count)
    return [size + 1 if n < extra else size for n in range(count)]


KEEP_ALIVE: float | None = None
"""Seconds an idle connection is kept: for ever, until its server closes it or TCP keepalive
finds it dead (`keepalive.py`). httpcore notices either before it reuses a connection — it polls
an idle connection's socket, and both a close and the error the kernel leaves on a connection
whose probes went unanswered make it readable — and replaces that one.

It was 60 s, for a connection that died silently (a NAT or firewall that forgot the flow, a
network change, a laptop that slept): a request on it waited for the 600 s read timeout. The
limit missed the sleep itself — httpcore measures idleness with `time.monotonic`, which on
Linux (`CLOCK_MONOTONIC`) and macOS stops while the machine is suspended — and it replaced
working connections: httpcore applies it only as a request walks the connection's pool, so at
10,000 concurrent runs pools left idle over a minute closed and reopened theirs (93 opened,
at most 84 open at once; in two waves 65 s apart, 729 opened where 496 are kept now;
docs/benchmarks.md, issue 31). Keepalive probes the peer itself: a dead connection errors out
after 60 s of silence, and idleness alone replaces none."""


@functools.cache
def _verified_tls() -> ssl.SSLContext:
    """The process's one TLS context for https:// URLs, made at the first such request: loading
    the CA bundle costs ~15-30 ms of CPU, which every pool (and every `http://` one) paid."""
    import httpx

    return httpx.create_ssl_context()


def _no_tls() -> ssl.SSLContext:
    """For a pool of `http://` URLs: a context that trusts no certificate (made in microseconds),
    so a redirect to `https://` fails closed instead of going unverified."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _Shard:
    """One pool of the shared client; its client is made on first use (one run at a time never
    needs more than the first pool)."""

    __slots__ = ("clients", "in_flight", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.in_flight = 0
        self.clients: dict[bool, httpx.AsyncClient] = {}  # by "is https"

    def open(self, secure: bool) -> httpx.AsyncClient:
        client = self.clients.get(secure)
        if client is None:
            import httpx

            # the limits go to the transport: a client given its own transport ignores `limits=`;
            # keep-alive for all: httpcore 1.0 closes an idle connection whenever its pool holds
            # more connections (idle or not) than that number, so fewer would churn connections
            limits = httpx.Limits(max_connections=self.size,
                                  max_keepalive_connections=self.size, keepalive_expiry=KEEP_ALIVE)
            tls = _verified_tls() if secure else _no_tls()

            def transport(proxy: str | None = None) -> httpx.AsyncHTTPTransport:
                return httpx.AsyncHTTPTransport(retries=0, limits=limits, verify=tls, proxy=proxy,
                                                socket_options=keepalive_socket_options())

            client = self.clients[secure] = httpx.AsyncClient(
                timeout=httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=None),
                transport=transport(), mounts=proxy_mounts(transport), follow_redirects=True,
            )
            # HTTP/1.1 keeps a connection unless told "close": httpx's default `connection:
            # keep-alive` says nothing, and every header costs ~700 bytecodes a request in httpx
            # and h11 (docs/benchmarks.md, issue 31, tenth session)
            del client.headers["connection"]
            from loopwright.endpoints.cookies import keep_set_cookies_only

            # httpx reads every response for cookies: ~2,450 bytecodes a request for none
            keep_set_cookies_only(client)
        return client


class _LoopClient:
    """The shared client of one event loop — several pools (`_Shard`), one gate — who holds it,
    and the hook that closes it when the loop finishes (`asyncio.run` and `asyncio.Runner` close
    every async generator of their loop before closing it, so a parked generator is our "loop
    is ending" callback)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.shards = [_Shard(size) for size in shard_sizes(max_connections())]
        # Never more requests in flight than the pools hold: the rest wait here, without a
        # timeout, instead of in httpcore's pool (a timed wait that scans every queued request)
        self.gate = asyncio.Semaphore(sum(shard.size for shard in self.shards))
        self.closed = False
        self.holders: weakref.WeakSet[object] = weakref.WeakSet()
        self._closer = self._close_when_loop_ends(loop)
        step = self._closer.asend(None)  # run to its `yield`: registers it with the loop
        with contextlib.suppress(StopIteration):
            step.send(None)

    def free_shard(self) -> _Shard:
        """The first pool with a free connection; one exists for every holder of the gate,
        since the gate admits no more requests than all pools hold. First, not round-robin: a
        few runs at a time keep reusing the first pool's connections."""
        for shard in self.shards:
            if shard.in_flight < shard.size:
                return shard
        raise AssertionError("the gate admitted more requests than the pools hold")

    async def _close_when_loop_ends(self, loop: asyncio.AbstractEventLoop
                                    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            self.closed = True
            if _clients.get(loop) is self:
                del _clients[loop]  # the clients' sockets refer to the loop: drop them all
            for shard in self.shards:
                for client in shard.clients.values():
                    await client.aclose()

    async def close(self) -> None:
        """Close now (its last holder let go); the same path as the loop's end."""
        await self._closer.aclose()


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = (
    weakref.WeakKeyDictionary()
)


def _loop_client() -> _LoopClient:
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is None or entry.closed:
        entry = _clients[loop] = _LoopClient(loop)
    return entry


def request_slot(own: httpx.AsyncClient | None = None, *, url: str | httpx.URL = ""
                 ) -> RequestSlot:
    """A client of the process's shared HTTP client for the running event loop, once one of its
    pools has a free connection for this request (or `own`, the user's client given as
    `Agent(http_client=)`, as it is: its pool and limits are the user's). `url`: the request's;
    an `http://` one gets a pool that never verifies a certificate, so it needs no TLS set-up
    (any other gets the verified one).

    The wait has no timeout and is local: it is no provider's failure and no retry attempt.
    Connections are reused across runs; the shared client closes when its loop finishes
    (`asyncio.run`, `asyncio.Runner`), or earlier when its last holder (`hold_shared_client`)
    lets go. httpx retries nothing (`retries=0` on the transport): ours is the only retry layer.
    """
    return RequestSlot(own, url)


class RequestSlot:
    """`request_slot`'s context manager. A class rather than `contextlib.asynccontextmanager`:
    every model request enters one, and the generator-based form costs a generator, its
    frames and contextlib's bookkeeping on each."""

    __slots__ = ("_gate", "_own", "_shard", "_url")

    def __init__(self, own: httpx.AsyncClient | None, url: str | httpx.URL) -> None:
        self._own = own
        self._url = url
        self._gate: asyncio.Semaphore | None = None
        self._shard: _Shard | None = None

    async def __aenter__(self) -> httpx.AsyncClient:
        if self._own is not None:
            return self._own
        entry = _loop_client()
        await entry.gate.acquire()
        try:
            shard = entry.free_shard()
            url = self._url  # its scheme, not its text: `str` of a URL writes it out again
            scheme = url.partition(":")[0] if isinstance(url, str) else url.scheme
            client = shard.open(secure=scheme != "http")
        except BaseException:
            entry.gate.release()
            raise
        shard.in_flight += 1
        self._gate, self._shard = entry.gate, shard
        return client

    async def __aexit__(self, *exc_info: object) -> None:
        shard, gate = self._shard, self._gate
        if shard is not None and gate is not None:
            self._shard = self._gate = None
            shard.in_flight -= 1
            gate.release()


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
