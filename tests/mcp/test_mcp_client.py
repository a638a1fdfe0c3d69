"""The MCP client (mcp/client.py) against real MCP servers, driven through `Agent` and the fake
model server: the npm reference servers over stdio, and an SDK server over streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, Message, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def make_agent(server: FakeModelServer, mcp_servers: dict[str, Any], tmp_path: Path,
               **kwargs: Any) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                 mcp_servers=mcp_servers, cache_dir=str(tmp_path / "cache"), **kwargs)


def tool_results(messages: list[Message]) -> dict[str, Message]:
    """Tool results by the name of the tool that produced them (last one wins)."""
    return {m.name or "": m for m in messages if m.role == "tool"}


def offered_tools(request: RecordedRequest) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in request.body.get("tools") or []}


async def test_stdio_server_tools_are_offered_with_prefixed_names_and_schemas(
        everything: str, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("mcp__everything__echo", {"message": "hi there"})]),
              Reply("done")]
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, {"everything": {"command": "node", "args": [everything],
                                                      "trust_annotations": True}},
                              tmp_path) as agent:
            result = await agent.run("echo something")
            echo = agent.registry.get("mcp__everything__echo")
            toggle = agent.registry.get("mcp__everything__toggle-simulated-logging")
    assert result.stop_reason == "completed"
    assert tool_results(result.messages)["mcp__everything__echo"].content == "Echo: hi there"
    offered = offered_tools(server.model_requests[0])
    assert offered["mcp__everything__echo"]["parameters"]["properties"]["message"]["type"] \
        == "string"
    assert offered["mcp__everything__get-sum"]["parameters"]["required"] == ["a", "b"]
    # read-only only where the annotations of a server the user trusts say so
    assert echo is not None and echo.read_only
    assert toggle is not None and not toggle.read_only


async def test_images_and_resources_are_turned_into_text(everything: str, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[
        call("mcp__ev__get-tiny-image"),
        call("mcp__ev__get-resource-links", {"count": 2}),
        call("mcp__ev__get-resource-reference", {"resourceType": "Text", "resourceId": 3}),
        call("mcp__ev__gzip-file-as-resource", {
            "name": "a.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}),
    ]), Reply("done")]
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, {"ev": {"command": "node", "args": [everything]}},
                              tmp_path) as agent:
            result = await agent.run("show me")
    results = tool_results(result.messages)
    image = results["mcp__ev__get-tiny-image"].content
    assert "[image: image/png, " in image and "KB; the binary data is not shown]" in image
    assert "iVBOR" not in image  # no base64 payload reaches the model
    links = results["mcp__ev__get-resource-links"].content
    assert links.count("[resource link: ") == 2 and "<demo://resource/dynamic/" in links
    reference = results["mcp__ev__get-resource-reference"].content
    assert "[resource demo://resource/dynamic/text/3 (text/plain)]\nResource 3:" in reference
    blob = results["mcp__ev__gzip-file-as-resource"].content
    assert blob.startswith("[resource demo://resource/session/a.gz (application/gzip), ")
    assert blob.endswith(" B of binary data, not shown]")


async def test_configured_env_reaches_stdio_servers(
        node_servers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LW_TEST_MEMORY_DIR", str(tmp_path))
    memory_server = str(node_servers / "server-memory" / "dist" / "index.js")
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}
    script = [Reply(tool_calls=[call("mcp__memory__create_entities", {"entities": [entity]})]),
              Reply("stored")]
    config = {"memory": {"command": "node", "args": [memory_server],
                         "env": {"MEMORY_FILE_PATH": "${LW_TEST_MEMORY_DIR}/graph.jsonl"}}}
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, config, tmp_path) as agent:
            result = await agent.run("remember Ada")
    assert not tool_results(result.messages)["mcp__memory__create_entities"].is_error
    stored = json.loads((tmp_path / "graph.jsonl").read_text().splitlines()[0])
    assert stored["name"] == "Ada" and stored["observations"] == ["wrote programs"]


async def test_a_server_side_tool_failure_is_an_error_result(
        node_servers: Path, tmp_path: Path) -> None:
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "a.txt").write_text("hello\n")
    fs_server = str(node_servers / "server-filesystem" / "dist" / "index.js")
    inside, outside = str(tmp_path / "allowed" / "a.txt"), str(tmp_path / "secret.txt")
    script = [Reply(tool_calls=[call("mcp__fs__read_text_file", {"path": inside}),
                                call("mcp__fs__read_text_file", {"path": outside})]),
              Reply("done")]
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, {"fs": {"command": "node", "args": [
                fs_server, str(tmp_path / "allowed")]}}, tmp_path) as agent:
            result = await agent.run("read")
            write_file = agent.registry.get("mcp__fs__write_file")
    first, second = [m for m in result.messages if m.role == "tool"]
    assert (first.is_error, first.content) == (False, "hello\n")
    assert second.is_error and second.content.startswith("Error: Access denied")
    assert write_file is not None and not write_file.read_only


async def test_a_call_past_its_timeout_errors_and_the_server_stays_usable(
        everything: str, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("mcp__ev__trigger-long-running-operation",
                                     {"duration": 2, "steps": 2})]),
              Reply(tool_calls=[call("mcp__ev__echo", {"message": "still here"})]),
              Reply("done")]
    config = {"ev": {"command": "node", "args": [everything], "call_timeout": 0.5}}
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, config, tmp_path) as agent:
            result = await agent.run("go")
    slow, echo = [m for m in result.messages if m.role == "tool"]
    assert slow.is_error and "timed out after 0.5s" in slow.content
    assert echo.content == "Echo: still here"


async def test_a_killed_server_is_restarted_once_then_reported_down(
        everything: str, tmp_path: Path, kill_process: Callable[[int], None]) -> None:
    pids = tmp_path / "pids"
    config = {"ev": {"command": "sh", "args": ["-c", recording_pid(pids, everything)]}}

    def handler(request: RecordedRequest) -> ScriptItem:
        turn = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
        if turn in (1, 2):  # kill the live server before the model's next call
            kill_process(int(pids.read_text().split()[-1]))
        if turn < 3:
            return Reply(tool_calls=[call("mcp__ev__echo", {"message": f"call {turn}"})])
        return Reply("done")

    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        async with make_agent(server, config, tmp_path, callbacks=[events.append]) as agent:
            result = await agent.run("go")
    first, second, third = [m for m in result.messages if m.role == "tool"]
    assert first.content == "Echo: call 0"
    assert second.content == "Echo: call 1"  # the crash was survived: restarted, call retried
    assert third.is_error
    assert "after 1 restart(s); its tools are unavailable" in third.content
    restarts = [e for e in events if e.type == "status" and e.kind == "mcp_restart"]
    assert len(restarts) == 1
    assert len(pids.read_text().split()) == 2  # started, restarted once, never again


async def test_an_unreachable_server_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    events: list[Event] = []
    config = {"broken": {"command": "sh", "args": ["-c", "echo cannot start >&2; exit 3"]},
              "silent": {"command": "sh", "args": ["-c", "cat > /dev/null"],
                         "connect_timeout": 0.5}}
    script = [Reply(tool_calls=[call("ping")]), Reply("fine")]
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, config, tmp_path, tools=[ping],
                              callbacks=[events.append]) as agent:
            result = await agent.run("go")
    assert result.stop_reason == "completed" and result.output == "fine"
    problems = {e.data["server"]: e.message for e in events
                if e.type == "status" and e.kind == "mcp"}
    assert "cannot start" in problems["broken"]  # the server's stderr, from its log
    assert "did not complete the MCP handshake within 0.5s" in problems["silent"]


async def test_a_streamable_http_server_with_headers(
        http_server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LW_TEST_TOKEN", "t0ken")
    config = {"web": {"url": http_server_url,
                      "headers": {"Authorization": "Bearer ${LW_TEST_TOKEN}"}}}
    script = [Reply(tool_calls=[call("mcp__web__whoami"), call("mcp__web__shout", {"text": "hi"}),
                                call("mcp__web__explode"), call("mcp__web__grumble")]),
              Reply("done")]
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, config, tmp_path) as agent:
            result = await agent.run("go")
            shout = agent.registry.get("mcp__web__shout")
    whoami, shouted, exploded, grumbled = [m for m in result.messages if m.role == "tool"]
    assert whoami.content == "Bearer t0ken"
    assert shouted.content == "HI"
    assert shout is not None and not shout.read_only  # it says so, but nobody trusted it
    # a JSON-RPC error and an error result both reach the model as error results
    assert exploded.is_error
    assert "JSON-RPC error -32050: the reactor is offline" in exploded.content
    assert grumbled.is_error and "grumble" in grumbled.content


async def test_closing_the_agent_stops_its_servers_and_a_new_run_reconnects(
        everything: str, tmp_path: Path, process_gone: Callable[[int], bool]) -> None:
    pids = tmp_path / "pids"
    config = {"ev": {"command": "sh", "args": ["-c", recording_pid(pids, everything)]}}
    script = [Reply(tool_calls=[call("mcp__ev__echo", {"message": "a"})]), Reply("one"),
              Reply(tool_calls=[call("mcp__ev__echo", {"message": "b"})]), Reply("two")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, config, tmp_path)
        first = await agent.run("go")
        await agent.aclose()
        stopped = process_gone(int(pids.read_text().split()[0]))
        second = await agent.run("again")
        await agent.aclose()
    assert stopped
    assert tool_results(first.messages)["mcp__ev__echo"].content == "Echo: a"
    assert tool_results(second.messages)["mcp__ev__echo"].content == "Echo: b"
    assert len(pids.read_text().split()) == 2


def recording_pid(pid_file: Path, script: str) -> str:
    """A shell command that appends its pid to `pid_file`, then becomes `node script`."""
    return f'echo $$ >> "{pid_file}"; exec node "{script}"'



def test_the_sync_chat_api_reconnects_on_each_event_loop(everything: str, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("mcp__ev__echo", {"message": "a"})]), Reply("one"),
              Reply(tool_calls=[call("mcp__ev__echo", {"message": "b"})]), Reply("two")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, {"ev": {"command": "node", "args": [everything]}}, tmp_path)
        answers = [agent.chat("first"), agent.chat("second")]  # two asyncio.run() loops
        echoes = [m["content"] for r in server.model_requests for m in r.body["messages"]
                  if m["role"] == "tool"]
    assert answers == ["one", "two"]
    assert echoes == ["Echo: a", "Echo: b"]


async def test_tools_whose_names_read_alike_once_fitted_stay_apart(
        http_server_url: str, tmp_path: Path) -> None:
    """`get.user` cleaned to `get_user` and two names cut at 64 characters made one tool name
    each, and the registry kept only the first: the model could not reach the other."""
    from loopwright.mcp.config import tool_name

    dotted, long_second = tool_name("web", "get.user"), tool_name("web", "lookup_" + "x" * 60
                                                                          + "_second")
    assert dotted != "mcp__web__get_user" and len(long_second) <= 64
    script = [Reply(tool_calls=[call(dotted), call("mcp__web__get_user"), call(long_second)]),
              Reply("done")]
    with FakeModelServer(replies=script) as server:
        async with make_agent(server, {"web": {"url": http_server_url}}, tmp_path) as agent:
            result = await agent.run("go")
    offered = offered_tools(server.model_requests[0])
    assert {dotted, "mcp__web__get_user", long_second,
            tool_name("web", "lookup_" + "x" * 60 + "_first")} <= set(offered)
    assert all(len(name) <= 64 for name in offered)
    answers = [m.content for m in result.messages if m.role == "tool"]
    assert answers == ["from get.user", "from get_user", "second"]
    assert tool_name("web", "shout") == "mcp__web__shout"  # a name that fits is unchanged
