"""Whatever number a server puts where its window should be — JSON's `Infinity`, `NaN`, a
negative, a float, text, a bool, 10^12 — the probe takes a plausible window or none, and the run
starts: never a raw exception out of `Agent.run`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from cpu_growth import cpu_growth
from loopwright import Agent
from loopwright.endpoints.probe import DEFAULT_LOCAL_WINDOW


@asynccontextmanager
async def window_server(listing: str, props: str) -> AsyncIterator[str]:
    """`/v1/models` answers `listing`, a model request a reply, any other path (`/props`,
    `/api/ps`, `/api/show`) `props` (JSON text, as sent)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, path, _ = head.split(b" ", 2)
        body = (listing if path == b"/v1/models" else props).encode()
        if method == b"POST":
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
        if path == b"/v1/chat/completions":
            body = json.dumps({"id": "c", "object": "chat.completion", "model": "m", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "answered"},
                 "finish_reason": "stop"}]}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                     + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    finally:
        server.close()


VALUES = {  # as written in the reply → the window taken
    "Infinity": None, "-Infinity": None, "NaN": None, "-4096": None, "0": None, "1": None,
    "1000000000000": None, "true": None, "null": None, '"lots"': None, "[4096]": None,
    "4096.9": 4096, '"4096"': 4096, "4096": 4096,
}


@pytest.mark.parametrize("value", sorted(VALUES))
async def test_a_vllm_listing_window_of_any_value(value: str) -> None:
    listing = ('{"object": "list", "data": [{"id": "m", "owned_by": "vllm", '
               f'"max_model_len": {value}}}]}}')
    async with window_server(listing, "{}") as base_url:
        windows = await Agent("m", base_url=base_url, api_key="k").context_windows()
    assert windows[0].tokens == (VALUES[value] or DEFAULT_LOCAL_WINDOW)


@pytest.mark.parametrize("value", sorted(VALUES))
async def test_a_llamacpp_props_window_of_any_value(value: str) -> None:
    listing = '{"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]}'
    props = f'{{"default_generation_settings": {{"n_ctx": {value}}}}}'
    async with window_server(listing, props) as base_url:
        windows = await Agent("m", base_url=base_url, api_key="k").context_windows()
    assert windows[0].tokens == (VALUES[value] or DEFAULT_LOCAL_WINDOW)


async def test_the_run_starts_after_an_infinite_window() -> None:
    listing = ('{"object": "list", "data": [{"id": "m", "owned_by": "vllm", '
               '"max_model_len": Infinity}]}')
    async with window_server(listing, "{}") as base_url:
        result = await Agent("m", base_url=base_url, api_key="k").run("hi", raise_on_error=False)
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error


DEEP = "[" * 100_000 + "]" * 100_000  # Python's JSON decoder recurses once a level


@pytest.mark.parametrize("where", ["listing", "props"])
async def test_a_reply_nested_too_deep_to_decode_is_no_window(where: str) -> None:
    listing = '{"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]}'
    listing, props = (f'{{"data": {DEEP}}}', "{}") if where == "listing" else (
        listing, f'{{"n_ctx": {DEEP}}}')
    async with window_server(listing, props) as base_url:
        result = await Agent("m", base_url=base_url, api_key="k").run("hi", raise_on_error=False)
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error


async def test_ollama_parameters_of_blank_lines_are_read_in_linear_time() -> None:
    # /api/show's `parameters` text is searched for a num_ctx line: 200,000 blank lines took a
    # quadratic search (minutes on the event loop) where a line may begin
    listing = '{"object": "list", "data": [{"id": "m:latest", "owned_by": "library"}]}'

    async def read(lines: int) -> None:
        props = json.dumps({"models": [], "parameters": "\n" * lines + 'stop "<|im_end|>"'})
        async with window_server(listing, props) as base_url:
            windows = await Agent("m", base_url=base_url, api_key="k").context_windows()
        assert (windows[0].tokens, windows[0].source) == (DEFAULT_LOCAL_WINDOW, "default")

    assert await cpu_growth(read, 25_000, 200_000) < 8


async def test_ollama_num_ctx_is_read_from_its_parameters() -> None:
    listing = '{"object": "list", "data": [{"id": "m:latest", "owned_by": "library"}]}'
    props = json.dumps({"models": [], "parameters": 'stop "<|im_end|>"\nnum_ctx    6000'})
    async with window_server(listing, props) as base_url:
        windows = await Agent("m", base_url=base_url, api_key="k").context_windows()
    assert (windows[0].tokens, windows[0].source) == (6000, "probe:/api/show")


async def test_a_model_id_of_any_length_is_named_in_a_line_of_bounded_length() -> None:
    from loopwright.endpoints.probe import preflight
    from loopwright.errors import ConfigError

    ids = ["a" * 200_000, "b" * 200_000]  # a server's listing: no limit on what it writes
    listing = json.dumps({"object": "list", "data": [{"id": i, "owned_by": "x"} for i in ids]})
    async with window_server(listing, "{}") as base_url:
        agent = Agent("nope", base_url=base_url, api_key="k")
        with pytest.raises(ConfigError) as refused:
            await preflight((await agent.providers())[0])
    message = str(refused.value)
    assert "is not served" in message and "aaa" in message and "bbb" in message
    assert len(message) < 1_000


async def test_a_listing_larger_than_any_server_sends_is_not_read_whole() -> None:
    # a server's reply is read whole into memory and decoded: 64 MB of small entries (~2.3 M
    # objects once decoded) within the probe's time bound, and a hostile server could send GBs
    from loopwright.endpoints.servers import MAX_REPLY_BYTES, fetch_listing

    entry = '{"id": "m", "owned_by": "vllm", "max_model_len": 4096},'
    count = 64 * 1024 * 1024 // len(entry)
    listing = '{"object": "list", "data": [' + entry * count + '{"id": "m"}]}'
    async with window_server(listing, "{}") as base_url:
        found = await fetch_listing(base_url, headers={"authorization": "Bearer k"}, timeout=30)
    assert found.status == 0 and f"{MAX_REPLY_BYTES // 1_000_000} MB" in found.error
