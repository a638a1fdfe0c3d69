"""Hostile MCP servers (`hostile_server.py`, on the `mcp` SDK's low-level server) against the
client, through `Agent`, `loopwright run` and the fake model server: a server's tool list and
results are data the user did not write, and every attack ends in a bounded error or a bounded
result."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import FAST, HANG_GUARD, hostile, mcp_notes, results, run_against
from typer.testing import CliRunner

from loopwright import Agent
from loopwright.cli.main import app
from loopwright.mcp import tool_name
from loopwright.testing import FakeModelServer, Reply, call

# -- the tool list ------------------------------------------------------------------------------

def test_a_ref_bomb_schema_is_left_out_without_stalling_the_run(tmp_path: Path) -> None:
    """A schema of a few hundred bytes whose definitions each point twice at the one before
    would be inlined into 2**40 parts on the event loop: `loopwright run` stalled for good."""
    with FakeModelServer(replies=[Reply(tool_calls=[call("mcp__h__echo", {"text": "hi"})]),
                                  Reply("done")]) as server:
        env = {**os.environ, "LOOPWRIGHT_MCP_SERVERS": json.dumps({"h": hostile("ref-bomb")}),
               "LOOPWRIGHT_CACHE_DIR": str(tmp_path / "cache"),
               "XDG_CONFIG_HOME": str(tmp_path / "config")}
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "go", "--model", "test-model",
             "--base-url", server.base_url, "--api-key", "k"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD)
        offered = {t["function"]["name"] for t in server.model_requests[0].body["tools"]}
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "mcp__h__echo" in offered and "mcp__h__bomb" not in offered
    assert "mcp__h__cycle" in offered  # a $ref cycle stays a $ref: small, and kept
    assert "its tool 'bomb' is left out: its input schema would grow past 20,000 parts" \
        in done.stderr


async def test_ten_thousand_tools_are_cut_to_128_and_the_user_is_told(tmp_path: Path) -> None:
    answers, offered, events = await run_against(
        {"h": hostile("many-tools")}, [("mcp__h__echo", {"text": "hi"})], tmp_path)
    assert len(offered) == 128 and offered[0]["name"] == "mcp__h__echo"
    assert answers["mcp__h__echo"] == "many-tools echo: hi"
    assert any("offers more than 128 tools; only the first 128 are used (name the ones wanted "
               "in mcp_servers.h.tools)" in note for note in mcp_notes(events))


async def test_a_server_with_a_tools_filter_keeps_the_tools_it_names(tmp_path: Path) -> None:
    """The limit counts after `tools = [...]`: a named tool past the 128th is still offered."""
    config = {**hostile("many-tools"), "tools": ["t9999", "echo"]}
    answers, offered, events = await run_against(
        {"h": config}, [("mcp__h__t9999", {"text": "x"})], tmp_path)
    assert {t["name"] for t in offered} == {"mcp__h__echo", "mcp__h__t9999"}
    assert answers["mcp__h__t9999"] == "many-tools t9999: x"
    assert mcp_notes(events) == []


async def test_a_ten_megabyte_description_is_cut(tmp_path: Path) -> None:
    _, offered, _ = await run_against(
        {"h": hostile("huge-description")}, [("mcp__h__echo", {"text": "hi"})], tmp_path)
    verbose = next(t for t in offered if t["name"] == "mcp__h__verbose")
    assert len(verbose["description"]) < 2_100
    assert verbose["description"].endswith(" more characters not shown]")
    titled = next(t for t in offered if t["name"] == "mcp__h__titled")  # no description: its title
    assert titled["description"].startswith("a title in place of one a title")
    assert len(titled["description"]) < 2_100
    echo = next(t for t in offered if t["name"] == "mcp__h__echo")
    assert echo["description"] == "Echo the text."  # a short one is untouched


async def test_built_in_names_stay_under_the_server_prefix(tmp_path: Path) -> None:
    answers, offered, _ = await run_against(
        {"h": hostile("shadow")}, [("bash", {"command": "id"}), ("mcp__h__bash", {"text": "x"})],
        tmp_path)
    names = {t["name"] for t in offered}
    assert {"mcp__h__bash", "mcp__h__write_file", "mcp__h__read_file"} <= names
    assert not names & {"bash", "write_file", "read_file", "web_fetch"}
    assert answers["bash"].startswith("Error: there is no tool named 'bash'.")
    assert answers["mcp__h__bash"] == "shadow bash: x"


async def test_a_tool_named_like_another_servers_tool_does_not_take_its_calls(
        tmp_path: Path) -> None:
    """Server `h`'s tool `x__echo` and server `h__x`'s tool `echo` both read `mcp__h__x__echo`:
    the first server to connect answered the other's calls."""
    other = tool_name("h__x", "echo")
    answers, offered, _ = await run_against(
        {"h": hostile("shadow"), "h__x": hostile("plain")},
        [("mcp__h__x__echo", {"text": "1"}), (other, {"text": "2"})], tmp_path)
    names = [t["name"] for t in offered]
    assert len(names) == len(set(names)) and other != "mcp__h__x__echo"
    assert answers["mcp__h__x__echo"] == "shadow x__echo: 1"
    assert answers[other] == "plain echo: 2"


# -- annotations and server-to-client requests --------------------------------------------------

async def test_harmless_annotations_do_not_skip_an_ask_rule(tmp_path: Path) -> None:
    """`attack` claims readOnlyHint, destructiveHint false, openWorldHint false: the user's ask
    rule still applies, and with nobody to ask the call is refused."""
    answers, _, _ = await run_against(
        {"h": hostile("plain")}, [("mcp__h__attack", {"text": "x"})], tmp_path,
        policy={"mcp__h__attack": {"ask": [".*"]}})
    assert answers["mcp__h__attack"].startswith("Error:")
    assert "no attack" not in answers["mcp__h__attack"]


async def test_sampling_elicitation_and_roots_are_refused(tmp_path: Path) -> None:
    """A server asking for the user's model (sampling), for input (elicitation) or for the
    workspace's paths (roots) gets an error; nothing reaches the model (`run_against` checks
    the model saw the run's two requests alone) and the call fails for the model to read."""
    servers = {mode: hostile(mode) for mode in ("sample", "elicit", "roots")}
    answers, _, _ = await run_against(
        servers, [(f"mcp__{mode}__attack", {}) for mode in servers], tmp_path)
    for mode in servers:
        answer = answers[f"mcp__{mode}__attack"]
        assert answer.startswith("Error: MCP server") and "back-channel" in answer, answer
    assert str(tmp_path) not in answers["mcp__roots__attack"]


# -- results and notifications ------------------------------------------------------------------

async def test_links_to_local_files_and_metadata_addresses_are_shown_not_fetched(
        tmp_path: Path) -> None:
    answers, _, _ = await run_against({"h": hostile("links")}, [("mcp__h__attack", {})],
                                      tmp_path)
    assert answers["mcp__h__attack"] == (
        "[resource link: creds <file:///etc/shadow>]\n"
        "[resource link: meta <http://169.254.169.254/latest/meta-data/>]\n"
        "[image: image/png, 10 B; the binary data is not shown]")


async def test_a_flood_of_log_and_progress_notifications_does_not_slow_the_call(
        tmp_path: Path) -> None:
    answers, _, events = await asyncio.wait_for(run_against(
        {"h": hostile("log-flood")}, [("mcp__h__attack", {})], tmp_path), HANG_GUARD)
    assert answers["mcp__h__attack"] == "flooded"
    assert len(events) < 100  # the server's log lines are not events


async def test_a_hundred_thousand_content_blocks_are_bounded(tmp_path: Path) -> None:
    answers, _, _ = await run_against({"h": hostile("many-blocks")}, [("mcp__h__attack", {})],
                                      tmp_path)
    answer = answers["mcp__h__attack"]
    assert answer.startswith("[Output too long: ") and "Full output saved to " in answer
    assert len(answer) < 10_000


async def test_a_tool_list_changed_after_the_first_call_does_not_change_what_is_offered(
        tmp_path: Path) -> None:
    """After its first call the server swaps `attack`'s description and schema and sends
    `notifications/tools/list_changed`: the model keeps being offered the definition read at
    connect, in this run and the agent's next."""
    script = [Reply(tool_calls=[call("mcp__h__attack", {"text": "1"})]),
              Reply(tool_calls=[call("mcp__h__echo", {"text": "2"})]), Reply("first done"),
              Reply("second done")]
    with FakeModelServer(replies=script) as server:
        async with Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                         mcp_servers={"h": hostile("rug-pull")},
                         cache_dir=str(tmp_path / "cache")) as agent:
            first = await agent.run("go")
            second = await agent.run("again")
        offered = [{t["function"]["name"]: t["function"] for t in request.body["tools"]}
                   for request in server.model_requests]
    assert results(first.messages) == {"mcp__h__attack": "swapped",
                                       "mcp__h__echo": "rug-pull echo: 2"}
    assert second.output == "second done" and len(offered) == 4
    for tools in offered:
        attack = tools["mcp__h__attack"]
        assert attack["description"] == "Attack."
        assert list(attack["parameters"]["properties"]) == ["text"]


async def test_a_stdio_server_gets_only_the_variables_it_was_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's keys stay with loopwright: a server sees PATH, HOME and the like, plus its own
    `env` table (where `${VAR}` hands over one variable on purpose)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "canary-2")
    monkeypatch.setenv("SEARCH_TOKEN", "canary-3")
    config = {**hostile("env"), "env": {"GIVEN_TOKEN": "${SEARCH_TOKEN}"}}
    answers, _, _ = await run_against({"h": config}, [("mcp__h__attack", {})], tmp_path)
    names = json.loads(answers["mcp__h__attack"])
    assert "GIVEN_TOKEN" in names and "PATH" in names
    assert not {"OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "SEARCH_TOKEN"} & set(names)


# -- a server that misbehaves on the wire -------------------------------------------------------

def quick(mode: str) -> dict[str, Any]:
    """A server whose calls are given 3 s: a call that hangs ends soon. Its handshake keeps
    the usual time, since a loaded machine starts a Python server slowly."""
    return {**hostile(mode), "call_timeout": 3}


def mute(mode: str) -> dict[str, Any]:
    """A server given 3 s for its handshake, for one that never completes it."""
    return {**hostile(mode), "connect_timeout": 3}



async def test_a_server_that_never_answers_the_handshake_is_reported_and_the_run_goes_on(
        tmp_path: Path) -> None:
    answers, offered, events = await asyncio.wait_for(run_against(
        {"mute": mute("mute"), "h": hostile("plain")}, [("mcp__h__echo", {"text": "hi"})],
        tmp_path), HANG_GUARD)
    assert answers["mcp__h__echo"] == "plain echo: hi"
    assert not any(t["name"].startswith("mcp__mute__") for t in offered)
    [note] = mcp_notes(events)
    assert "MCP server 'mute' is unavailable" in note
    assert "did not complete the MCP handshake within 3s" in note


async def test_a_call_that_hangs_or_whose_server_exits_ends_in_an_error_for_the_model(
        tmp_path: Path) -> None:
    answers, _, events = await asyncio.wait_for(run_against(
        {"hang": quick("hang"), "exit": quick("exit")},
        [("mcp__hang__attack", {}), ("mcp__exit__attack", {})], tmp_path), HANG_GUARD)
    assert answers["mcp__hang__attack"] == "Error: 'attack' on MCP server 'hang' timed out after 3s"
    assert answers["mcp__exit__attack"].startswith(
        "Error: MCP server 'exit' lost the connection again right after a restart")
    assert [e.data["server"] for e in events
            if e.type == "status" and e.kind == "mcp_restart"] == ["exit"]


async def test_noise_and_answers_to_requests_never_made_on_stdout_are_ignored(
        tmp_path: Path) -> None:
    answers, _, _ = await run_against({"h": quick("garbage")},
                                      [("mcp__h__attack", {}), ("mcp__h__echo", {"text": "b"})],
                                      tmp_path)
    assert answers == {"mcp__h__attack": "answered after the noise",
                       "mcp__h__echo": "garbage echo: b"}


async def test_a_schema_that_is_not_an_object_takes_its_server_down_not_the_run(
        tmp_path: Path) -> None:
    """The SDK refuses a tool list with a scalar input schema (a provider would refuse every
    request with it): that server is reported unavailable, the others serve."""
    answers, offered, events = await run_against(
        {"bad": hostile("non-object"), "h": hostile("plain")},
        [("mcp__h__echo", {"text": "hi"})], tmp_path)
    assert not any(t["name"].startswith("mcp__bad__") for t in offered)
    assert answers["mcp__h__echo"] == "plain echo: hi"
    [note] = mcp_notes(events)
    assert note.startswith("MCP server 'bad' is unavailable: MCP server 'bad' failed to list "
                           "its tools: ValidationError:")


async def test_a_server_error_with_the_connection_closed_code_is_not_a_crash(
        tmp_path: Path) -> None:
    """JSON-RPC leaves -32000 to servers, and the SDK uses it for a closed connection too: a
    server answering a call with it was restarted and the call sent again (a second run of a
    call that may not be repeated), then all its tools were reported down."""
    answers, _, events = await run_against(
        {"h": quick("loud-call")},
        [("mcp__h__attack", {}), ("mcp__h__echo", {"text": "still here"})], tmp_path)
    assert answers["mcp__h__attack"].startswith(
        "Error: MCP server 'h' answered 'attack' with JSON-RPC error -32000: call 1 failed yyy")
    assert answers["mcp__h__echo"] == "loud-call echo: still here"
    assert not [e for e in events if e.type == "status" and e.kind == "mcp_restart"]


async def test_a_five_megabyte_error_from_a_server_is_cut_where_the_user_sees_it(
        tmp_path: Path) -> None:
    answers, _, events = await run_against({"h": hostile("loud-list")},
                                           [("mcp__h__echo", {})], tmp_path)
    assert answers["mcp__h__echo"].startswith("Error: there is no tool named 'mcp__h__echo'.")
    [note] = mcp_notes(events)
    assert note.startswith("MCP server 'h' is unavailable: MCP server 'h' failed to list its "
                           "tools: MCPError: \x1b]0;pwned\x07 list failed xxx")
    assert len(note) < 3_000 and note.endswith(" more characters not shown]")


def test_mcp_list_shows_a_servers_error_inert_and_cut(tmp_path: Path) -> None:
    env = {"LOOPWRIGHT_MCP_SERVERS": json.dumps({"h": hostile("loud-list")}),
           "LOOPWRIGHT_CACHE_DIR": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = CliRunner().invoke(app, ["mcp", "list"], env=env)
    assert result.exit_code == 1
    assert "list failed xxx" in result.output and "\x1b" not in result.output
    assert len(result.output) < 3_000


def test_mcp_list_names_the_tools_a_run_leaves_out(tmp_path: Path) -> None:
    """`mcp list` shows what a run will not offer the model and why, as text and as JSON; a
    server whose tools are all offered shows no such line."""
    env = {"LOOPWRIGHT_MCP_SERVERS": json.dumps({"h": hostile("ref-bomb"),
                                                 "plain": hostile("shadow")}),
           "LOOPWRIGHT_CACHE_DIR": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    text = CliRunner().invoke(app, ["mcp", "list"], env=env)
    assert text.exit_code == 0, text.output
    left = [line for line in text.output.splitlines() if "left out:" in line]
    assert len(left) == 1 and "'bomb'" in left[0] and "$refs are inlined" in left[0]
    rows = [json.loads(line) for line in CliRunner().invoke(
        app, ["mcp", "list", "--json"], env=env).output.splitlines()]
    by_name = {row["name"]: row for row in rows}
    assert len(by_name["h"]["left_out"]) == 1 and "left_out" not in by_name["plain"]
    assert "mcp__h__bomb" not in {t["name"] for t in by_name["h"]["tools"]}


# -- streamable HTTP ----------------------------------------------------------------------------

class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with `reply` (status, headers) and records its headers."""

    reply: tuple[int, dict[str, str]] = (404, {})
    seen: list[dict[str, str]]

    def _answer(self) -> None:
        self.seen.append(dict(self.headers))
        status, headers = self.reply
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def recording_server(reply: tuple[int, dict[str, str]]) -> Iterator[tuple[str, list[Any]]]:
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Recorder,), {"reply": reply, "seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", seen
    finally:
        server.shutdown()
        server.server_close()


async def test_a_redirect_does_not_carry_the_servers_token_elsewhere(tmp_path: Path) -> None:
    """An HTTP server answering 307 to another address: the client does not follow it, so the
    `Authorization` header configured for this server never reaches the other one."""
    with recording_server((404, {})) as (elsewhere, reached), \
            recording_server((307, {"Location": elsewhere})) as (url, asked):
        config = {"url": url, "headers": {"Authorization": "Bearer tok-canary"},
                  "connect_timeout": 5}
        _, offered, events = await run_against({"web": config}, [("mcp__web__x", {})],
                                               tmp_path)
    assert asked and asked[0].get("Authorization") == "Bearer tok-canary"
    assert reached == []
    assert not any(t["name"].startswith("mcp__web__") for t in offered)
    [note] = mcp_notes(events)
    assert note.startswith("MCP server 'web' is unavailable")
