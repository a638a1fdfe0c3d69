"""`loopwright mcp-server` driven by the official MCP client, over stdio and streamable HTTP,
against the fake model server: start a task, continue its session, progress while it runs,
approvals denied unless configured, bad input answered with an error."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import cli_env, closed_by_the_server


def _args(server: FakeModelServer, *extra: str) -> list[str]:
    return ["-m", "loopwright", "mcp-server", "--model", "fake-model", "--base-url",
            server.base_url, *extra]


@asynccontextmanager
async def stdio_agent(server: FakeModelServer, home: Path, workspace: Path,
                      *extra: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=_args(server, *extra),
                                   env=cli_env(home), cwd=str(workspace))
    with (home / "mcp-server.log").open("w") as log:
        async with Client(stdio_client(params, errlog=log)) as client:
            yield client


def _limit_files(most: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))


@contextmanager
def http_agent(server: FakeModelServer, home: Path, workspace: Path,
               max_open_files: int | None = None) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, *_args(server, "--http", "--port", str(port), "--token",
                                "t" * 32)],
        cwd=workspace, env=cli_env(home), stdout=subprocess.DEVNULL,
        stderr=(home / "mcp-http.log").open("w"),
        preexec_fn=None if max_open_files is None else lambda: _limit_files(max_open_files))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError((home / "mcp-http.log").read_text()) from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    return dict(data.get("result", data))


async def test_start_continue_and_progress_over_stdio(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    script = [Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]),
              Reply("notes.txt says hello."),
              Reply("Still hello.")]
    progress: list[tuple[float, float | None, str | None]] = []

    async def seen(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with FakeModelServer(script) as server:
        async with stdio_agent(server, tmp_path, workspace) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"start_task", "continue_session"}
            first = structured(await client.call_tool(
                "start_task", {"prompt": "What does notes.txt say?"}, progress_callback=seen))
            assert first["answer"] == "notes.txt says hello."
            assert first["stop_reason"] == "completed" and first["turns"] == 2
            messages = [m for _, _, m in progress]
            assert messages[:3] == ["turn 1", "tool read_file", "turn 2"]
            again = structured(await client.call_tool(
                "continue_session", {"session_id": first["session_id"], "prompt": "And now?"}))
            assert again["answer"] == "Still hello."
            assert again["session_id"] == first["session_id"]
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("continue_session", {"session_id": "nope",
                                                            "prompt": "hi"})
            assert unknown.value.code == -32602 and "unknown session" in str(unknown.value)
        last = server.model_requests[-1].body["messages"]
        assert any("notes.txt says hello." in str(m) for m in last)  # the session went on


async def test_approvals_are_denied_unless_configured(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / "victim").mkdir(parents=True)
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf victim"})]),
              Reply("I was not allowed to delete it.")]
    with FakeModelServer(script) as server:
        async with stdio_agent(server, tmp_path, workspace) as client:
            result = structured(await client.call_tool("start_task",
                                                       {"prompt": "delete victim"}))
        assert (workspace / "victim").is_dir()
        assert result["answer"] == "I was not allowed to delete it."
        tool_result = server.model_requests[1].body["messages"][-1]
        assert "was denied" in tool_result["content"]
        assert "no user is available" in tool_result["content"]


def test_streamable_http_needs_the_token_and_runs_a_task(tmp_path: Path) -> None:
    import anyio

    workspace = tmp_path / "project"
    workspace.mkdir()
    with FakeModelServer([Reply("Hello over HTTP.")]) as server, \
            http_agent(server, tmp_path, workspace) as url:
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401

        async def main() -> dict[str, Any]:
            headers = {"Authorization": "Bearer " + "t" * 32}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                return structured(await client.call_tool("start_task", {"prompt": "hi"}))

        assert anyio.run(main)["answer"] == "Hello over HTTP."


def test_slow_clients_do_not_keep_an_mcp_client_out_of_the_http_server(tmp_path: Path
                                                                      ) -> None:
    # as `loopwright serve` (tests/serve/test_connection_limits.py): connections that never
    # finished a request's head held every file descriptor, and a real client was not accepted
    # until the head deadline closed them all
    workspace = tmp_path / "project"
    workspace.mkdir()
    with FakeModelServer([]) as server, \
            http_agent(server, tmp_path, workspace, max_open_files=160) as url:
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        slow: list[socket.socket] = []
        try:
            for _ in range(240):
                try:
                    connection = socket.create_connection((host, int(port)), timeout=5)
                except OSError:  # the server's backlog is full: its limit holds
                    break
                connection.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                slow.append(connection)
            closed_before = len(closed_by_the_server(slow))
            answer = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                 timeout=60)  # a hang guard only
            assert answer.status_code == 401  # served (no token given)
            # not held out: the server made room by closing the oldest waiting connection
            # (and any it was still catching up on, at most its backlog), where a held-out
            # client is let in once the head deadline has closed every slow one it accepted
            freed_for_the_client = len(closed_by_the_server(slow)) - closed_before
            assert freed_for_the_client < len(slow) // 4, (freed_for_the_client, len(slow))
        finally:
            for connection in slow:
                connection.close()


@pytest.mark.parametrize("prompt", ["", "   "])
async def test_an_empty_prompt_is_an_error(tmp_path: Path, prompt: str) -> None:
    with FakeModelServer([]) as server:
        async with stdio_agent(server, tmp_path, tmp_path) as client:
            with pytest.raises(MCPError) as empty:
                await client.call_tool("start_task", {"prompt": prompt})
    assert empty.value.code == -32602 and "prompt is empty" in str(empty.value)
    assert server.model_requests == []
