"""A window probe is bounded as a whole, not per read: a server that answers its probes a byte at
a time (busy loading a model, or hostile) never holds a run back for more than the probe's
timeout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from loopwright import Agent
from loopwright.endpoints.probe import DEFAULT_LOCAL_WINDOW, probe_server

LLAMACPP_LISTING = {"object": "list", "data": [
    {"id": "m", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]}


@asynccontextmanager
async def dripping_server(slow_paths: set[str], *, gap: float = 0.3
                          ) -> AsyncIterator[tuple[str, asyncio.Queue[str]]]:
    """Answers `/v1/models` as llama.cpp does, and `/props` with its window; the paths in
    `slow_paths` send their body (led by 20,000 spaces: over an hour) one byte every `gap`
    seconds, never idle for a read timeout. Yields the base URL and a queue of the slow paths
    whose client closed the connection before their body was sent."""

    handlers: set[asyncio.Task[None]] = set()
    given_up: asyncio.Queue[str] = asyncio.Queue()

    async def drip(writer: asyncio.StreamWriter, body: bytes) -> None:
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(gap)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode()
            data = LLAMACPP_LISTING if path == "/v1/models" else {
                "default_generation_settings": {"n_ctx": 4096}}
            body = json.dumps(data).encode()
            if path in slow_paths:
                body = b" " * 20_000 + body  # JSON allows it
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body))
            if path not in slow_paths:
                writer.write(body)
            else:
                sending = asyncio.ensure_future(drip(writer, body))
                closed = asyncio.ensure_future(reader.read())  # b"" once the client closes
                await asyncio.wait({sending, closed}, return_when=asyncio.FIRST_COMPLETED)
                if not sending.done():
                    given_up.put_nowait(path)
                sending.cancel()
                closed.cancel()
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1", given_up
    finally:
        server.close()
        for task in handlers:  # those still dripping
            task.cancel()


async def test_a_listing_sent_a_byte_at_a_time_gives_up_at_the_probe_deadline() -> None:
    async with dripping_server({"/v1/models"}) as (base_url, given_up):
        agent = Agent("m", base_url=base_url, api_key="k")
        # the hang guards only: the listing would take over an hour to arrive
        windows = await asyncio.wait_for(agent.context_windows(), 120)
        assert await asyncio.wait_for(given_up.get(), 120) == "/v1/models"
    assert (windows[0].tokens, windows[0].source) == (DEFAULT_LOCAL_WINDOW, "default")


async def test_a_window_endpoint_sent_a_byte_at_a_time_gives_up_at_the_probe_deadline(
        ) -> None:
    async with dripping_server({"/props"}) as (base_url, given_up):
        found = await asyncio.wait_for(probe_server(base_url, "m"), 120)  # hang guards only
        assert await asyncio.wait_for(given_up.get(), 120) == "/props"
    assert found is None


async def test_a_prompt_server_is_still_asked_and_answers() -> None:
    async with dripping_server(set()) as (base_url, given_up):
        assert await probe_server(base_url, "m") == (4096, "probe:/props")
    assert given_up.empty()
