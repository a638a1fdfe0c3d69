"""The proxies the environment names (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`) carry
model traffic. The shared client's pools bring their own transport, and httpx reads those
variables only for a client without one: every request went direct, so behind a proxy no hosted
model could be reached. A small forward proxy on 127.0.0.1 stands in for the user's."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from loopwright import Agent, RunResult
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer, Reply

FAST = RetryPolicy(attempts=1, base_delay=0.01, jitter=0)

HOST = "models.example.test"  # resolved by the proxy alone: nothing else could reach it


class ForwardProxy:
    """A plain-HTTP forward proxy: one request a connection, sent on to the fake model server
    whatever host it names, its request line kept for the test."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.request_lines: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            body = await reader.readexactly(int(length.group(1))) if length else b""
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.decode().split(" ")
            self.request_lines.append(f"{method} {target}")
            path = re.sub(r"^[a-z]+://[^/]+", "", target)
            rest = re.sub(rb"(?im)^connection:[^\r]*\r\n", b"", rest)
            upstream_reader, upstream = await asyncio.open_connection("127.0.0.1",
                                                                      self.upstream_port)
            upstream.write(f"{method} {path} {version}\r\nConnection: close\r\n".encode()
                           + rest + body)
            while chunk := await upstream_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
            upstream.close()
        finally:
            writer.close()


@dataclass
class Setting:
    forward: ForwardProxy
    proxy_url: str  # the proxy, for HTTP_PROXY
    remote: str  # a base URL only the proxy can reach
    local: str  # the same server by its loopback address


@pytest.fixture
async def setting(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Setting]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    with FakeModelServer([Reply("answered")] * 4, strict=False) as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        forward = ForwardProxy(port)
        listener = await asyncio.start_server(forward.handle, "127.0.0.1", 0)
        proxy_port = listener.sockets[0].getsockname()[1]
        async with listener:
            yield Setting(forward, f"http://127.0.0.1:{proxy_port}",
                          f"http://{HOST}:{port}/v1", server.base_url)


async def run(base_url: str) -> RunResult[str]:
    agent = Agent("fake-model", base_url=base_url, api_key="k", retry=FAST)
    try:
        return await agent.run("hello", raise_on_error=False)
    finally:
        await agent.aclose()


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
async def test_model_requests_go_through_the_proxy_the_environment_names(
        setting: Setting, monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """On main the request went direct: the client looked the proxy's host up itself and failed."""
    monkeypatch.setenv(variable, setting.proxy_url)
    result = await run(setting.remote)
    assert result.output == "answered"
    assert f"POST {setting.remote}/chat/completions" in setting.forward.request_lines


async def test_no_proxy_keeps_a_host_direct(setting: Setting,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", setting.proxy_url)
    monkeypatch.setenv("NO_PROXY", f"other.test,{HOST}")
    result = await run(setting.remote)  # direct: nobody resolves the made-up host
    assert not result.output and f"cannot resolve {HOST}" in str(result.error)
    assert setting.forward.request_lines == []


async def test_a_loopback_model_server_is_never_sent_through_a_proxy(
        setting: Setting, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local server (llama.cpp, Ollama) cannot be reached through a proxy, and a `NO_PROXY`
    that forgot `localhost` must not break every local model."""
    monkeypatch.setenv("HTTP_PROXY", setting.proxy_url)
    for base_url in (setting.local, setting.local.replace("127.0.0.1", "localhost")):
        result = await run(base_url)
        assert result.output == "answered"
    assert setting.forward.request_lines == []


async def test_without_a_proxy_nothing_changes(setting: Setting) -> None:
    result = await run(setting.local)
    assert result.output == "answered"
    assert setting.forward.request_lines == []


async def test_a_proxy_httpx_cannot_use_refuses_its_requests_and_breaks_no_other(
        setting: Setting, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy httpx cannot make a transport for (an unknown scheme here; a `socks5://` one
    without `socksio` is the same) raised while the shared client was made, so every request
    failed, a local server's too. Now a request it would carry is refused with the reason,
    never sent direct; a loopback server still answers."""
    monkeypatch.setenv("HTTP_PROXY", "ftp://proxy.example.test:21")
    assert (await run(setting.local)).output == "answered"
    with pytest.raises(ConfigError, match=r"proxy the environment names \(ftp://proxy"):
        await run(setting.remote)
    assert setting.forward.request_lines == []
