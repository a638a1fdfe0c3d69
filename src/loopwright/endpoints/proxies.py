"""The proxies the environment names, for the shared client's pools.

httpx reads `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (and, on macOS and Windows,
the system's proxy settings) only for a client made without a transport of its own; the shared
client's pools bring theirs (`endpoints/base.py`: no retries, the pool's limits, TCP
keepalive), so they route through the proxies themselves, read by httpx's own function, each
proxy through a transport made like the direct one.

A model server on the loopback interface (llama.cpp, Ollama, LM Studio, the test server) is
never sent through a proxy, which could not reach it: a `NO_PROXY` that forgot `localhost` would
otherwise break every local model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from loopwright.errors import ConfigError

if TYPE_CHECKING:
    import httpx

LOOPBACK = ("all://127.0.0.1", "all://localhost", "all://[::1]")


def _may_name_proxies() -> bool:
    """Whether reading the proxy settings can find any: on Linux only variables ending in
    `_proxy` name them (checked without importing `urllib.request`, which httpx's reader does)."""
    if sys.platform in ("darwin", "win32"):  # the system's settings too
        return True
    return any(name.lower().endswith("_proxy") for name in os.environ)


def proxy_mounts(transport_for: Callable[[str], httpx.AsyncBaseTransport]
                 ) -> dict[str, httpx.AsyncBaseTransport | None]:
    """httpx `mounts` for the proxies the environment names (`transport_for(proxy_url)` makes a
    proxy's transport; None routes a pattern to the client's own, direct, transport); empty
    when there are none."""
    if not _may_name_proxies():
        return {}
    from httpx._utils import get_environment_proxies  # httpx's own reading of them

    named = get_environment_proxies()
    if not any(named.values()):
        return {}
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {
        pattern: None if url is None else _usable(transport_for, url)
        for pattern, url in named.items()}
    mounts.update(dict.fromkeys(LOOPBACK))
    return mounts


def _usable(transport_for: Callable[[str], httpx.AsyncBaseTransport], url: str
            ) -> httpx.AsyncBaseTransport:
    """The proxy's transport, or, where httpx cannot make one (a `socks5://` proxy without the
    `socksio` package, an unknown scheme), one that refuses each request it would carry with
    the reason: never the request sent direct instead (a proxy may be there to hide where it
    goes), and never every request broken, a local server's too."""
    try:
        return transport_for(url)
    except (ImportError, ValueError) as exc:
        return _refusing(f"the proxy the environment names ({url}) cannot be used: {exc} "
                         "(HTTPS_PROXY, HTTP_PROXY, ALL_PROXY; NO_PROXY to go direct)")


def _refusing(reason: str) -> httpx.AsyncBaseTransport:
    import httpx

    class Refusing(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            raise ConfigError(reason)  # not a connection failure: retrying cannot help

    return Refusing()
