"""The streamable-HTTP transport to an MCP server: the SDK's, on an HTTP client of ours (the
server's headers and timeouts) with one message bounded as on stdio (`max_message_mb`).

The SDK bounds one server-sent event (`max_sse_event_size`, 1 MB unless told: set to the
server's limit, so a result that fits over stdio fits here too) but reads a JSON body whole.
A body over the limit fails as it is read, before it is held: the SDK turns the error into that
call's JSON-RPC parse error, which names the limit. The session goes on — over HTTP one answer
too large leaves nothing out of step — so the server is not restarted.

Imported when an HTTP server connects (`httpx2` is the SDK's HTTP client).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx2

if TYPE_CHECKING:
    from loopwright.mcp.config import MCPServerConfig


class CappedBody(httpx2.AsyncByteStream):
    """A response body that fails once more than `limit` bytes of it have come."""

    def __init__(self, stream: httpx2.AsyncByteStream, limit: int) -> None:
        self.stream = stream
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.stream:
            size += len(chunk)
            if size > self.limit:
                raise httpx2.StreamError(f"the server's answer is over {self.limit:,} bytes (the "
                                         f"limit is max_message_mb)")
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


@contextlib.asynccontextmanager
async def http_transport(config: MCPServerConfig) -> AsyncIterator[Any]:
    """Streamable HTTP with the server's headers; the HTTP client closes with the transport."""
    from mcp.client.streamable_http import streamable_http_client

    assert config.url is not None
    limit = config.max_message_bytes

    async def bound_body(response: httpx2.Response) -> None:
        # a hook, not a transport of ours: it holds for a proxy's transport as well
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != "text/event-stream" and isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = CappedBody(response.stream, limit)

    timeout = httpx2.Timeout(config.connect_timeout, read=max(300.0, config.call_timeout + 5))
    async with httpx2.AsyncClient(headers=config.headers, timeout=timeout,
                                  event_hooks={"response": [bound_body]}) as http, \
            streamable_http_client(config.url, http_client=http,
                                   max_sse_event_size=limit) as streams:
        yield streams
