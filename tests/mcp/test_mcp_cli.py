"""`loopwright mcp list` (cli/mcp.py) against real MCP servers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner

from loopwright.cli.main import app


def invoke(servers: Mapping[str, object], tmp_path: Path, *args: str) -> tuple[int, str]:
    env = {"LOOPWRIGHT_MCP_SERVERS": json.dumps(servers),
           "LOOPWRIGHT_CACHE_DIR": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = CliRunner().invoke(app, ["mcp", "list", *args], env=env)
    return result.exit_code, result.output


def test_mcp_list_shows_each_server_and_its_tools(everything: str, tmp_path: Path) -> None:
    code, output = invoke({"ev": {"command": "node", "args": [everything]}}, tmp_path)
    assert code == 0, output
    assert output.startswith("ev  (stdio: node ")
    assert "mcp__ev__echo" in output and "Echoes back the input string" in output
    # the server says its tools are read-only; untrusted, that claim is not shown as a fact
    assert "read-only" not in output


def test_mcp_list_shows_read_only_only_for_a_server_whose_annotations_are_trusted(
        everything: str, tmp_path: Path) -> None:
    code, output = invoke({"ev": {"command": "node", "args": [everything],
                                  "trust_annotations": True}}, tmp_path, "--json")
    assert code == 0, output
    echo = next(t for t in json.loads(output)["tools"] if t["remote_name"] == "echo")
    assert echo["read_only"] is True


def test_mcp_list_json_reports_a_failing_server_and_exits_1(
        everything: str, tmp_path: Path) -> None:
    servers = {"ev": {"command": "node", "args": [everything]},
               "broken": {"command": "sh", "args": ["-c", "echo no such thing >&2; exit 2"]}}
    code, output = invoke(servers, tmp_path, "--json")
    rows = {row["name"]: row for row in map(json.loads, output.splitlines())}
    assert code == 1
    assert rows["ev"]["ok"] and rows["ev"]["transport"] == "stdio"
    echo = next(t for t in rows["ev"]["tools"] if t["remote_name"] == "echo")
    assert echo == {"name": "mcp__ev__echo", "remote_name": "echo", "read_only": False,
                    "description": "Echoes back the input string"}
    assert not rows["broken"]["ok"] and "no such thing" in rows["broken"]["error"]


def test_mcp_list_lists_a_streamable_http_server(http_server_url: str, tmp_path: Path) -> None:
    code, output = invoke({"web": {"url": http_server_url}}, tmp_path, "--json")
    assert code == 0, output
    row = json.loads(output)
    assert row["transport"] == "http" and row["target"] == http_server_url
    names = {t["remote_name"]: t["name"] for t in row["tools"]}
    assert {names[n] for n in ("shout", "whoami", "explode", "grumble", "get_user")} == {
        "mcp__web__shout", "mcp__web__whoami", "mcp__web__explode", "mcp__web__grumble",
        "mcp__web__get_user"}
    # the names changed to fit keep the server's own beside them, each its own
    assert names["get.user"].startswith("mcp__web__get_user_")
    assert len(set(names.values())) == len(names) == 9


def test_mcp_list_rejects_a_malformed_server_entry(tmp_path: Path) -> None:
    code, output = invoke({"odd": {"command": "x", "url": "http://127.0.0.1:1/mcp"}}, tmp_path)
    assert code == 6
    assert "mcp_servers.odd needs exactly one of 'command' (stdio) or 'url' (HTTP)" in output


def test_mcp_list_without_servers_explains_how_to_add_one(tmp_path: Path) -> None:
    code, output = invoke({}, tmp_path)
    assert code == 0
    assert "No MCP servers are configured" in output
