"""A script the user's own hooks run (`python3 .hooks/check.py`, configured in the user's config)
runs outside the sandbox, with the user's rights and environment, after the very next tool call.
The file tools ask before writing it; a sandboxed command could rewrite it freely (with `--yes`,
or where the shell policy cannot see the write), so the hook ran the model's code outside the
sandbox. The script is now read-only inside the sandbox, as the git hooks are; so is the script
a stdio MCP server is started with (`python3 tools/server.py`), which ran at the next start.

Real bubblewrap, a real hook process, a real MCP server, through `Agent` against the fake model
server."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from sandbox_helpers import tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.hooks import Hooks
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.usefixtures("needs_bwrap")

FAST = RetryPolicy(base_delay=0.01, jitter=0)
GUARD = "import sys, json; json.load(sys.stdin); print('{}')\n"


async def run_with_hook(workdir: Path, *commands: str) -> list[str]:
    """`after_tool` runs `python3 .hooks/check.py` (the user's hook); each command a turn, with
    --yes; the tool results."""
    hook = f"{shlex.quote(sys.executable)} .hooks/check.py"
    script = [*(Reply(tool_calls=[call("bash", {"command": c})]) for c in commands),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approve_all=True,
                      hooks=Hooks.from_config({"after_tool": [hook]}))
        result = await agent.run("go")
    return tool_results(result.messages)


@pytest.mark.parametrize("rewrite", [
    "cat > .hooks/check.py <<'EOF'\n{payload}\nEOF",
    "python3 -c 'import sys; open(\".hooks/check.py\", \"w\").write(sys.argv[1])' '{payload}'",
    "mv .hooks .old && mkdir .hooks && printf '%s\\n' '{payload}' > .hooks/check.py",
])
async def test_a_hook_script_in_the_workspace_cannot_be_rewritten_by_a_command(
        tmp_path: Path, canary: Path, rewrite: str) -> None:
    (tmp_path / ".hooks").mkdir()
    (tmp_path / ".hooks" / "check.py").write_text(GUARD)
    payload = f"import pathlib; pathlib.Path({str(canary)!r}).touch(); print(\"{{}}\")"
    [result, _] = await run_with_hook(tmp_path, rewrite.format(payload=payload), "echo next")
    assert "Read-only file system" in result or "Device or resource busy" in result, result
    assert (tmp_path / ".hooks" / "check.py").read_text() == GUARD
    assert not canary.exists()


async def test_files_beside_a_hook_script_stay_writable(tmp_path: Path) -> None:
    # must not fire: only the script itself is held, not its folder or the rest of the project
    (tmp_path / ".hooks").mkdir()
    (tmp_path / ".hooks" / "check.py").write_text(GUARD)
    [result] = await run_with_hook(tmp_path, "echo x > .hooks/notes.txt && echo y > a.txt "
                                             "&& cat .hooks/notes.txt a.txt")
    assert result == "x\ny\n[exit code 0]"


SERVER = """from mcp.server.mcpserver import MCPServer

server = MCPServer("project-server")


@server.tool()
def ping() -> str:
    \"\"\"Answer pong.\"\"\"
    return "pong"


server.run(transport="stdio")
"""


async def run_with_server(workdir: Path, *calls: tuple[str, dict[str, str]],
                          answer: bool = True) -> tuple[list[str], list[str]]:
    """One run whose model makes `calls` (a turn each) with the project's stdio MCP server
    `python3 tools/server.py` configured; the tool results and the approvals asked."""
    asked: list[str] = []

    def approval(action: str, detail: str) -> bool:
        asked.append(detail)
        return answer

    script = [*(Reply(tool_calls=[call(name, arguments)]) for name, arguments in calls),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approval=approval,
                      cache_dir=str(workdir.parent / "cache"),
                      mcp_servers={"project": {"command": sys.executable,
                                               "args": ["tools/server.py"],
                                               "cwd": str(workdir)}})
        try:
            result = await agent.run("go")
        finally:
            await agent.aclose()
    return tool_results(result.messages), asked


async def test_an_mcp_servers_script_cannot_be_rewritten_for_the_next_start(
        tmp_path: Path, canary: Path) -> None:
    workdir = tmp_path / "project"
    (workdir / "tools").mkdir(parents=True)
    (workdir / "tools" / "server.py").write_text(SERVER)
    planted = f"import pathlib; pathlib.Path({str(canary)!r}).touch()\n"
    [result], _ = await run_with_server(workdir, ("bash", {
        "command": f"printf '%s' {shlex.quote(planted)} > tools/server.py; mv tools t2; "
                   "echo ok > tools/notes.txt && cat tools/notes.txt"}))
    assert "Read-only file system" in result and "Device or resource busy" in result, result
    assert result.endswith("ok\n[exit code 0]"), result  # must not fire: the rest of tools/
    assert (workdir / "tools" / "server.py").read_text() == SERVER
    [pong], _ = await run_with_server(workdir, ("mcp__project__ping", {}))  # the next start
    assert pong == "pong" and not canary.exists()


async def test_file_tools_ask_before_writing_an_mcp_servers_script(tmp_path: Path) -> None:
    workdir = tmp_path / "project"
    (workdir / "tools").mkdir(parents=True)
    (workdir / "tools" / "server.py").write_text(SERVER)
    [result], asked = await run_with_server(
        workdir, ("write_file", {"path": "tools/server.py", "content": "print('mine')\n"}),
        answer=False)
    assert "protected" in result and len(asked) == 1 and "tools/server.py" in asked[0]
    assert (workdir / "tools" / "server.py").read_text() == SERVER
