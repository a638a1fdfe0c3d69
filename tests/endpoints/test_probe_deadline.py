"""A window probe is bounded as a whole, not per read: a server that answers its probes a byte at
a time (busy loading a model, or hostile) never holds a run back for more than the probe's
timeout."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from loopwright import Agent
from loopwright.endpoints.probe import DEFAULT_LOCAL_WINDOW, PROBE_TIMEOUT, probe_server

LLAMACPP_LISTING = {"object": "list", "data": [
    {"id": "m", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]}


@asynccontextmanager
async def dripping_server(slow_paths: set[str], *, gap: float = 0.3
                          ) -> AsyncIterator[str]:
    """Answers `/v1/models` as llama.cpp does, and `/props` with its window; the paths in
    `slow_paths` send their body one byte every `gap` seconds (never idle for a read timeout).
    Yields the base URL."""

    handlers: set[asyncio.Task[None]] = set()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode()
            data = LLAMACPP_LISTING if path == "/v1/models" else {
                "default_generation_settings": {"n_ctx": 4096}}
            body = json.dumps(data).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body))
            if path not in slow_paths:
                writer.write(body)
            else:
                for byte in body:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(gap)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()
        for task in handlers:  # those still dripping
            task.cancel()


async def test_a_listing_sent_a_byte_at_a_time_gives_up_within_the_probe_timeout() -> None:
    async with dripping_server({"/v1/models"}) as base_url:
        started = time.monotonic()
        windows = await Agent("m", base_url=base_url, api_key="k").context_windows()
        waited = time.monotonic() - started
    assert (windows[0].tokens, windows[0].source) == (DEFAULT_LOCAL_WINDOW, "default")
    assert waited < PROBE_TIMEOUT * 3, waited


async def test_a_window_endpoint_sent_a_byte_at_a_time_gives_up_within_the_probe_timeout(
        ) -> None:
    async with dripping_server({"/props"}) as base_url:
        started = time.monotonic()
        found = await probe_server(base_url, "m")
        waited = time.monotonic() - started
    assert found is None
    assert waited < PROBE_TIMEOUT * 3, waited


async def test_a_prompt_server_is_still_asked_and_answers() -> None:
    async with dripping_server(set()) as base_url:
        assert await probe_server(base_url, "m") == (4096, "probe:/props")
