"""`loopwright sessions …` browses the same sessions in SQLite and PostgreSQL (`--db` takes a
file or a postgresql:// URL)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from loopwright import Agent, tool
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"the zeppelin code for {key} is 42"


def handler(request: RecordedRequest) -> ScriptItem:
    body = request.body["messages"]
    if CHILD_PROMPT.splitlines()[0] in body[0]["content"]:
        return Reply("the child checked it")
    steps = sum(1 for m in body if m["role"] == "assistant")
    script: list[ScriptItem] = [Reply(tool_calls=[call("lookup", {"key": "alpha"})]),
                                Reply(tool_calls=[call("delegate", {"task": "check it"})]),
                                Reply("The code is 42.")]
    return script[min(steps, 2)]


def sessions(tmp_path: Path, *args: str) -> Result:
    from loopwright.cli.main import app

    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("LOOPWRIGHT_")}
    env.update(LOOPWRIGHT_DATA_DIR=str(tmp_path / "data"))
    return CliRunner().invoke(app, ["sessions", *args], env=env)


async def test_sessions_commands_work_on_either_store(store_spec: str, tmp_path: Path) -> None:
    with FakeModelServer(handler=handler) as server:
        result = await Agent("gpt-4o-mini", base_url=server.base_url, api_key="k",
                             tools=[lookup, make_delegate_tool()], store=store_spec,
                             retry=RetryPolicy(base_delay=0.01, jitter=0),
                             session_id="browse-me-1", workdir=str(tmp_path)).run("find the code")
    assert result.output == "The code is 42."
    listed = sessions(tmp_path, "list", "--json", "--db", store_spec)
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert {r["id"] for r in rows} == {"browse-me-1", *(r["id"] for r in rows if r["parent_id"])}
    shown = sessions(tmp_path, "show", "browse-m", "--turns", "--events", "--db", store_spec)
    assert shown.exit_code == 0, shown.output
    assert "The code is 42." in shown.output and "sub-agents" in shown.output
    assert "check it" in shown.output  # the child's title
    assert "lookup" in shown.output and "turns" in shown.output
    found = sessions(tmp_path, "search", "zeppelin", "--db", store_spec)
    assert found.exit_code == 0 and "browse-m" in found.output
    exported = sessions(tmp_path, "export", "browse-me-1", "--db", store_spec)
    lines = [json.loads(line) for line in exported.output.splitlines()]
    assert lines[0]["role"] == "system" and lines[-1]["content"] == "The code is 42."
    removed = sessions(tmp_path, "rm", "browse-me-1", "--yes", "--db", store_spec)
    assert removed.exit_code == 0, removed.output
    assert "browse-me-1" not in sessions(tmp_path, "list", "--json", "--db", store_spec).output
