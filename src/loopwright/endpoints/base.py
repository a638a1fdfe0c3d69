"""An endpoint: base URL, key, headers — and the one shared `httpx.AsyncClient` per event loop."""

from __future__ import annotations

import asyncio
import re
import weakref
from dataclasses import dataclass, field

import httpx

_VERSION_SEGMENT = re.compile(r"^v\d+[a-z0-9]*$")


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


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_client() -> httpx.AsyncClient:
    """The process's HTTP client for the running event loop (connections are reused across runs).

    httpx retries nothing by default (`retries=0` on the transport): ours is the only retry layer.
    """
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=60.0),
            limits=httpx.Limits(max_connections=500, max_keepalive_connections=200),
            transport=httpx.AsyncHTTPTransport(retries=0),
            follow_redirects=True,
        )
        _clients[loop] = client
    return client


async def close_shared_client() -> None:
    """Close the running loop's client (the sync wrappers call this before their loop ends)."""
    loop = asyncio.get_running_loop()
    client = _clients.pop(loop, None)
    if client is not None:
        await client.aclose()
