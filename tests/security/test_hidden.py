"""Issue 29, item 3: what a sandboxed command must not read — loopwright's data directory (other
projects' sessions, attachments, memory), the user's config directory wherever XDG puts it (the
serve token, the trusted-projects list), and credentials in the environment, by name and by value.

Real bubblewrap, through `Agent` runs against the fake model server. Every directory lives outside
/tmp (the sandbox's private /tmp would hide it anyway and prove nothing).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.usefixtures("needs_bwrap")

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@pytest.fixture
def place() -> Iterator[Path]:
    """A host directory outside /tmp for homes, data and projects."""
    path = Path(tempfile.mkdtemp(prefix="loopwright-hidden-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def run_bash(workdir: Path, command: str, **options: Any) -> str:
    """One agent run in `workdir` whose model calls bash with `command`; the tool's output."""
    script = [Reply(tool_calls=[call("bash", {"command": command})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), **options)
        result = await agent.run("go")
    [output] = tool_results(result.messages)
    return output


async def remember(workdir: Path, secret: str, **options: Any) -> None:
    """A run in project A whose conversation holds `secret` (stored in the sessions database)."""
    with FakeModelServer(replies=[Reply(text=f"noted {secret}")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      workdir=str(workdir), store=True, **options)
        await agent.run(f"the deploy key is {secret}")
        await agent.aclose()


def holds(directory: Path, secret: str) -> bool:
    """Whether some file in `directory` (the database or its write-ahead log) holds `secret`."""
    return any(secret.encode() in path.read_bytes() for path in directory.rglob("*")
               if path.is_file())


def projects(place: Path) -> tuple[Path, Path]:
    first, second = place / "project-a", place / "project-b"
    first.mkdir()
    second.mkdir()
    return first, second


async def test_another_projects_sessions_are_hidden(place: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(place / "data"))
    project_a, project_b = projects(place)
    await remember(project_a, "SECRET-A-4711")
    assert holds(place / "data" / "loopwright", "SECRET-A-4711")
    output = await run_bash(project_b, f"grep -a -r -o 'SECRET-A-[0-9]*' {place / 'data'}; "
                            f"ls -A {place / 'data' / 'loopwright'}; echo end")
    assert "SECRET-A-4711" not in output and "sessions.db" not in output
    assert output.rstrip().endswith("end\n[exit code 0]")


async def test_a_data_dir_set_in_the_settings_is_hidden_too(place: Path) -> None:
    project_a, project_b = projects(place)
    data = place / "elsewhere"
    await remember(project_a, "SECRET-B-0815", data_dir=str(data))
    assert holds(data, "SECRET-B-0815")
    (data / "memory").mkdir(exist_ok=True)
    (data / "memory" / "MEMORY.md").write_text("SECRET-M-1 remembered\n")
    output = await run_bash(project_b, f"grep -a -r -o 'SECRET-[A-Z]-[0-9]*' {data}; echo end",
                            data_dir=str(data))
    assert "SECRET-" not in output and output.endswith("end\n[exit code 0]")


async def test_the_config_dir_wherever_xdg_puts_it_is_hidden(
        place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = place / "xdg-config" / "loopwright"
    config.mkdir(parents=True)
    (config / "serve_token").write_text("serve-token-31337\n")
    (config / "trusted_projects.json").write_text('{"/home/me/project": "abc"}\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(place / "xdg-config"))
    workdir = place / "project"
    workdir.mkdir()
    output = await run_bash(workdir, f"cat {config}/serve_token {config}/trusted_projects.json; "
                            f"ls -A {config}; echo end")
    assert "serve-token-31337" not in output and "/home/me/project" not in output
    assert "No such file" in output and output.endswith("end\n[exit code 0]")


async def test_the_file_loopwright_config_names_is_hidden(
        place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = place / "my-settings.toml"
    explicit.write_text('api_key = "sk-config-999"\n')
    monkeypatch.setenv("LOOPWRIGHT_CONFIG", str(explicit))
    workdir = place / "project"
    workdir.mkdir()
    output = await run_bash(workdir, f"cat {explicit}; echo end")
    assert "sk-config-999" not in output and output.endswith("end\n[exit code 0]")


async def test_mcp_server_logs_in_the_cache_are_hidden(
        place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a server's stderr may print its token (spilled outputs beside the logs: test_spill_sessions)
    monkeypatch.setenv("XDG_CACHE_HOME", str(place / "cache"))
    logs = place / "cache" / "loopwright" / "mcp"
    logs.mkdir(parents=True)
    (logs / "github.log").write_text("connected with token ghs-server-4242\n")
    (logs.parent / "notes.txt").write_text("a cache note\n")
    workdir = place / "project"
    workdir.mkdir()
    output = await run_bash(workdir, f"cat {logs}/github.log {logs.parent}/notes.txt; echo end")
    assert "ghs-server-4242" not in output and "a cache note" in output
    assert output.endswith("end\n[exit code 0]")


@pytest.mark.usefixtures("needs_git")
@pytest.mark.parametrize("xdg_cache", [False, True])
async def test_gits_credential_cache_daemon_is_out_of_reach(
        place: Path, monkeypatch: pytest.MonkeyPatch, xdg_cache: bool) -> None:
    # `git credential approve` with the cache helper starts a daemon that answers anyone who
    # reaches its socket with the passwords it holds
    home = place / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    if xdg_cache:
        monkeypatch.setenv("XDG_CACHE_HOME", str(place / "xdg-cache"))
    else:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    ask = "printf 'protocol=https\\nhost=example.com\\n\\n' | git credential-cache get; echo end"
    subprocess.run(["git", "-c", "credential.helper=cache", "credential", "approve"], check=True,
                   input="protocol=https\nhost=example.com\nusername=u\npassword=cached-4711\n\n",
                   text=True, timeout=30)
    try:
        workdir = place / "project"
        workdir.mkdir()
        output = await run_bash(workdir, ask)
        assert "cached-4711" not in output and output.endswith("end\n[exit code 0]"), output
    finally:
        subprocess.run(["git", "credential-cache", "exit"], timeout=30, check=False)


@pytest.mark.parametrize("relative", [
    ".vault-token", ".cargo/credentials.toml", ".gem/credentials", ".s3cfg", ".boto",
    ".config/hub", ".config/rclone/rclone.conf",
    ".terraform.d/credentials.tfrc.json", ".oci/config", ".config/op/config",
    ".local/share/keyrings/login.keyring"])
async def test_other_tools_tokens_in_the_home_are_hidden(
        place: Path, monkeypatch: pytest.MonkeyPatch, relative: str) -> None:
    home = place / "home"
    (home / relative).parent.mkdir(parents=True, exist_ok=True)
    (home / relative).write_text("token = tok-hidden-9999\n")
    (home / "notes.txt").write_text("plain notes\n")
    monkeypatch.setenv("HOME", str(home))
    workdir = place / "project"
    workdir.mkdir()
    output = await run_bash(workdir, f"cat {home / relative} {home}/notes.txt; echo end",
                            approve_all=True)  # --yes: the sandbox is what must hold
    assert "tok-hidden-9999" not in output and "plain notes" in output, output


async def test_credentials_in_the_environment_are_removed(
        place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leaks = {"MYSQL_PWD": "leak-mysql", "DB_PWD": "leak-db",
             "SENTRY_DSN": "https://leak0sentry0key@o42.ingest.sentry.io/7",
             "ERROR_REPORTING_URL": "https://leak1sentry1key@o42.ingest.sentry.io/8",
             "NOTIFY_URL": "https://hooks.slack.com/services/T0/B0/leak-slack",
             "CI_TRIGGER": "https://ci.example.com/build?token=leak-trigger"}
    for name, value in leaks.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PROJECT_HOMEPAGE", "https://example.com/docs")
    workdir = place / "project"
    workdir.mkdir()
    output = await run_bash(workdir, "env")
    assert "leak" not in output
    assert "PROJECT_HOMEPAGE=https://example.com/docs" in output and "PWD=" in output


async def test_what_is_not_loopwrights_stays_readable(
        place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # must not fire: the rest of the home and config directories, the workspace itself, and a
    # workspace that lies inside the data directory (the user chose it)
    home = place / "home"
    (home / ".config" / "other-tool").mkdir(parents=True)
    (home / ".config" / "other-tool" / "settings").write_text("other settings\n")
    (home / "notes.txt").write_text("plain notes\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    inside_data = home / ".local" / "share" / "loopwright" / "workspace"
    inside_data.mkdir(parents=True)
    (inside_data / "file.txt").write_text("workspace file\n")
    output = await run_bash(inside_data, f"cat {home}/notes.txt "
                            f"{home}/.config/other-tool/settings file.txt")
    assert output == "plain notes\nother settings\nworkspace file\n[exit code 0]"
