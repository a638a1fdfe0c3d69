"""One message from an MCP server is bounded (`max_message_mb`, 16 MB by default). A stdio
server writing one 100 MB JSON-RPC line was read whole, slowly (the SDK's reader joins a line's
chunks anew for each one: quadratic): the agent's peak RSS grew by ~80 MB before `call_timeout`
(30 s) ended the call, and the next call timed out too, the reader still in the line. Now the
call ends with an error naming the server, the server is restarted as after a crash, and the
client's memory stays near the limit: measured as the peak RSS of a child process running the
agent. Over streamable HTTP the limit holds for one JSON body and one server-sent event."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import sse_server
from hostile_helpers import HANG_GUARD, hostile, mcp_notes, run_against, run_turns

MB = 1024 * 1024

# the agent in a process of its own, so its peak RSS is its own: the run's results and events,
# and the peak before and after the run
CHILD = textwrap.dedent("""
    import asyncio, json, resource, sys
    from loopwright import Agent
    from loopwright.testing import FakeModelServer, Reply, call

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux

    async def main(servers):
        script = [Reply(tool_calls=[call("mcp__h__attack", {})]),
                  Reply(tool_calls=[call("mcp__h__echo", {"text": "after"})]), Reply("done")]
        with FakeModelServer(replies=script) as model:
            async with Agent("m", base_url=model.base_url, api_key="k", mcp_servers=servers,
                             cache_dir=sys.argv[2]) as agent:
                await agent.mcp.start()
                before = peak()
                events = []
                agent.callbacks.append(events.append)
                result = await agent.run("go")
        answers = [m.content for m in result.messages if m.role == "tool"]
        kinds = [e.kind for e in events if e.type == "status"]
        print(json.dumps({"answers": answers, "kinds": kinds, "before": before,
                          "after": peak()}))

    asyncio.run(main(json.loads(sys.argv[1])))
""")


def run_child(servers: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(servers),
                           str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report


def test_attack_a_100_mb_answer_ends_the_call_and_memory_stays_bounded(tmp_path: Path) -> None:
    report = run_child({"h": hostile("huge-answer")}, tmp_path)
    first, second = report["answers"]
    assert first.startswith("Error: MCP server 'h' sent a message of over 16,777,216 bytes"), first
    assert "(the limit is mcp_servers.h.max_message_mb = 16)" in first
    assert "'attack' was stopped and its answer dropped" in first and len(first) < 500
    assert second == "huge-answer echo: after"  # the restarted server serves
    assert report["kinds"].count("mcp_restart") == 1
    # the limit and a chunk, grown by doubling: well under the 100 MB sent, or ~450 MB before
    assert report["after"] - report["before"] < 60 * MB, report


async def test_twin_an_answer_under_the_limit_is_read_and_one_over_a_lower_limit_is_not(
        tmp_path: Path) -> None:
    """A 2 MB answer passes the default limit (and is cut to size as any tool's output is);
    with `max_message_mb = 1` it ends the call."""
    answers, _, events = await run_against({"h": hostile("big-answer")},
                                           [("mcp__h__attack", {})], tmp_path / "default")
    assert answers["mcp__h__attack"].startswith("[Output too long: "), answers
    assert "mcp_restart" not in [e.kind for e in events if e.type == "status"]
    answers, _, events = await run_against(
        {"h": {**hostile("big-answer"), "max_message_mb": 1}}, [("mcp__h__attack", {})],
        tmp_path / "lower")
    assert answers["mcp__h__attack"].startswith(
        "Error: MCP server 'h' sent a message of over 1,048,576 bytes"), answers
    assert "mcp_restart" in [e.kind for e in events if e.type == "status"]


async def test_a_server_with_no_restarts_left_is_reported_down_after_a_message_too_large(
        tmp_path: Path) -> None:
    """As after a crash with `max_restarts = 0`: its tools answer that it is down."""
    config = {**hostile("big-answer"), "max_message_mb": 1, "max_restarts": 0}
    answers, _, _ = await run_turns({"h": config}, [[("mcp__h__attack", {})],
                                                    [("mcp__h__echo", {"text": "after"})]],
                                    tmp_path)
    assert answers["mcp__h__attack"].startswith(
        "Error: MCP server 'h' sent a message of over 1,048,576 bytes"), answers
    assert answers["mcp__h__echo"].startswith(
        "Error: MCP server 'h' stopped (MCP server 'h' sent a message of over 1,048,576 bytes"), \
        answers
    assert "after 0 restart(s); its tools are unavailable" in answers["mcp__h__echo"]


async def test_attack_a_100_mb_line_before_the_handshake_is_reported(tmp_path: Path) -> None:
    answers, offered, events = await run_against(
        {"h": hostile("huge-hello"), "ok": hostile("plain")}, [("mcp__ok__echo", {"text": "hi"})],
        tmp_path)
    assert answers["mcp__ok__echo"] == "plain echo: hi"
    assert not any(t["name"].startswith("mcp__h__") for t in offered)
    [note] = mcp_notes(events)
    assert note.startswith("MCP server 'h' is unavailable: MCP server 'h' sent a message of over "
                           "16,777,216 bytes"), note


# -- streamable HTTP -----------------------------------------------------------------------------

async def test_attack_an_http_json_answer_over_the_limit_ends_the_call(
        json_server_url: str, tmp_path: Path) -> None:
    """`big` answers 2 MB in one JSON body (read whole, whatever its size): under the default
    limit it is read; over `max_message_mb = 1` it fails as it is read, the call ends with an
    error naming the server and the limit, and the next call is served."""
    calls = [("mcp__web__big", {"megabytes": 2})]
    answers, _, _ = await run_against({"web": {"url": json_server_url}}, calls,
                                      tmp_path / "default")
    assert answers["mcp__web__big"].startswith("[Output too long: "), answers
    script = [*calls, ("mcp__web__shout", {"text": "after"})]
    answers, _, _ = await run_turns(
        {"web": {"url": json_server_url, "max_message_mb": 1}}, [[call] for call in script],
        tmp_path / "lower")
    assert answers["mcp__web__big"] == (
        "Error: MCP server 'web' answered 'big' with JSON-RPC error -32700: Failed to parse JSON "
        "response: the server's answer is over 1,048,576 bytes (the limit is max_message_mb)")
    assert answers["mcp__web__shout"] == "AFTER"


async def test_attack_a_server_sent_event_over_the_limit_ends_the_call(tmp_path: Path) -> None:
    """As a JSON body, one event: 2 MB passes the default limit (the SDK's own 1 MB cut it),
    and fails over `max_message_mb = 1`."""
    calls = [("mcp__sse__big", {"megabytes": 2})]
    with sse_server.serving() as url:
        answers, _, _ = await run_against({"sse": {"url": url}}, calls, tmp_path / "default")
        assert answers["mcp__sse__big"].startswith("[Output too long: "), answers
        answers, _, _ = await run_against({"sse": {"url": url, "max_message_mb": 1}}, calls,
                                          tmp_path / "lower")
    answer = answers["mcp__sse__big"]
    assert answer.startswith("Error: MCP server 'sse' answered 'big' with JSON-RPC error"), answer
    assert "exceeded the 1048576 byte limit" in answer and len(answer) < 1_000, answer
