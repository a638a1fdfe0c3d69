"""Programs loopwright starts on the host are not found in the workspace. With the project's
virtual environment activated (`PATH=project/.venv/bin:…`, or `node_modules/.bin`, or a relative
`.` on `PATH`), a sandboxed command could write `.venv/bin/bwrap`: the next command's sandbox was
then started by that file, on the host, with the user's rights. bubblewrap is looked up on `PATH`
without the directories a command can write.

Real bubblewrap, through `Agent` against the fake model server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sandbox_helpers import tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import require_component

pytestmark = pytest.mark.usefixtures("needs_bwrap")

FAST = RetryPolicy(base_delay=0.01, jitter=0)
REAL_BWRAP = shutil.which("bwrap")


async def run_commands(workdir: Path, *commands: str) -> list[str]:
    script = [*(Reply(tool_calls=[call("bash", {"command": c})]) for c in commands),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approve_all=True)
        result = await agent.run("go")
    return tool_results(result.messages)


@pytest.mark.parametrize("entry", ["{workdir}/.venv/bin", ".venv/bin"])
async def test_a_bwrap_planted_on_path_in_the_workspace_is_not_started(
        tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    workdir = tmp_path / "project"
    (workdir / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("PATH", os.pathsep.join([entry.format(workdir=workdir),
                                                os.environ["PATH"]]))
    planted = f"#!/bin/sh\ntouch {canary}\nexec {REAL_BWRAP} \"$@\"\n"
    first, second = await run_commands(
        workdir, f"printf '%s' '{planted}' > .venv/bin/bwrap && chmod +x .venv/bin/bwrap",
        "echo inside && touch made-inside")
    assert first == "(no output)\n[exit code 0]", first
    assert second == "inside\n[exit code 0]", second  # must not fire: it still runs, sandboxed
    assert not canary.exists()
    assert (workdir / "made-inside").exists()


async def test_a_bwrap_planted_before_the_run_is_not_probed_or_started(
        tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the next start: the file is there when the agent first asks whether a sandbox can be made
    workdir = tmp_path / "project"
    (workdir / ".venv" / "bin").mkdir(parents=True)
    planted = workdir / ".venv" / "bin" / "bwrap"
    planted.write_text(f"#!/bin/sh\ntouch {canary}\nexec {REAL_BWRAP} \"$@\"\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(planted.parent), os.environ["PATH"]]))
    [result] = await run_commands(workdir, "echo inside")
    assert result == "inside\n[exit code 0]" and not canary.exists()


async def test_without_a_sandbox_grep_does_not_start_a_planted_ripgrep(
        tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # where no sandbox can be made ripgrep runs as it is: from the workspace it would be the
    # model's program, started with the user's rights
    require_component(shutil.which("rg") is not None, "ripgrep: pip install ripgrep")
    workdir = tmp_path / "project"
    (workdir / ".venv" / "bin").mkdir(parents=True)
    (workdir / "a.txt").write_text("needle\n")
    planted = workdir / ".venv" / "bin" / "rg"
    planted.write_text(f"#!/bin/sh\ntouch {canary}\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(planted.parent), os.environ["PATH"]]))
    script = [Reply(tool_calls=[call("grep", {"pattern": "needle"})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir),
                      sandbox_bwrap="/nonexistent/bwrap")
        result = await agent.run("go")
    [found] = tool_results(result.messages)
    assert "a.txt:1:needle" in found and not canary.exists()


async def test_a_ripgrep_planted_where_none_is_installed_is_not_chosen(
        tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # with no ripgrep on the host, grep must not pick the workspace's `rg` as "installed"
    workdir = tmp_path / "project"
    (workdir / ".venv" / "bin").mkdir(parents=True)
    (workdir / "a.txt").write_text("needle\n")
    planted = workdir / ".venv" / "bin" / "rg"
    planted.write_text(f"#!/bin/sh\ntouch {canary}\n")
    planted.chmod(0o755)
    bwrap_only = tmp_path / "bin"  # bubblewrap and a shell, but no ripgrep
    bwrap_only.mkdir()
    for program in ("bwrap", "sh", "bash"):
        (bwrap_only / program).symlink_to(shutil.which(program) or "/bin/sh")
    monkeypatch.setenv("PATH", os.pathsep.join([str(planted.parent), str(bwrap_only)]))
    script = [Reply(tool_calls=[call("grep", {"pattern": "needle"})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir),
                      sandbox_bwrap="/nonexistent/bwrap")
        result = await agent.run("go")
    [found] = tool_results(result.messages)
    assert found == "a.txt:1:needle" and not canary.exists()
