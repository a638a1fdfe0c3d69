"""Where no sandbox can be made (no bubblewrap, or bubblewrap that cannot start), commands fail
closed: anything that could change something needs approval, denied when nobody can approve.
These tests need no bubblewrap: they point the sandbox at a missing or failing binary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import cli, tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)



@pytest.mark.parametrize("bwrap", ["/nonexistent/bwrap", "false"])
async def test_without_a_sandbox_commands_need_approval_denied_without_approver(
        tmp_path: Path, bwrap: str) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": "touch made.txt"}),
                                call("bash", {"command": "ls"})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), sandbox_bwrap=bwrap)
        result = await agent.run("go")
        system = str(server.model_requests[0].body["messages"][0]["content"])
    refused, listed = tool_results(result.messages)
    assert "no sandbox is available" in refused and "approval" in refused
    assert not (tmp_path / "made.txt").exists()
    assert listed.endswith("[exit code 0]")  # a plainly read-only command still runs
    assert "Sandbox: unavailable" in system


async def test_without_bwrap_on_path_the_approver_is_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    asked: list[tuple[str, str]] = []

    def approve(action: str, detail: str) -> bool:
        asked.append((action, detail))
        return True

    script = [Reply(tool_calls=[call("bash", {"command": "echo ran > made.txt"})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), approval=approve)
        await agent.run("go")
    [(action, detail)] = asked
    assert action == "bash: run without a sandbox" and "bubblewrap" in detail
    assert (tmp_path / "made.txt").read_text() == "ran\n"


def test_cli_says_once_that_there_is_no_sandbox(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": "touch made.txt"})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        done = cli(server, tmp_path, LOOPWRIGHT_SANDBOX_BWRAP="/nonexistent/bwrap")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("no sandbox can be made here") == 1
    assert not (tmp_path / "made.txt").exists()


def test_chat_warns_once_when_the_sandbox_is_off(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LOOPWRIGHT_")}
    with FakeModelServer(replies=[]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "chat", "--sandbox", "full-access", "--model",
             "m", "--base-url", server.base_url, "--api-key", "k"],
            cwd=tmp_path, env=environ, input="/exit\n", capture_output=True, text=True,
            timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("WARNING: the sandbox is OFF") == 1
