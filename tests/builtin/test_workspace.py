"""The workspace boundary: file tools stay inside the working directory; secrets need approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, Tool, ToolContext, ToolError
from loopwright.builtin import apply_patch, edit_file, glob, grep, list_dir, read_file, write_file
from loopwright.builtin.workspace import is_secret_path
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, a sibling directory outside it with a file in it)."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read\n")
    (workspace / "ok.txt").write_text("fine\n")
    return workspace, outside


@pytest.mark.parametrize("path", ["../outside/secret.txt", "sub/../../outside/secret.txt"])
async def test_relative_escapes_are_refused(layout: tuple[Path, Path], path: str) -> None:
    workspace, _ = layout
    ctx = ToolContext(workdir=workspace)
    with pytest.raises(ToolError, match="outside the workspace"):
        await call_tool(read_file, ctx, path=path)


async def test_absolute_paths_outside_are_refused_inside_are_fine(
        layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    ctx = ToolContext(workdir=workspace)
    with pytest.raises(ToolError, match="outside the workspace"):
        await call_tool(read_file, ctx, path=str(outside / "secret.txt"))
    assert "fine" in await call_tool(read_file, ctx, path=str(workspace / "ok.txt"))


async def test_symlinks_pointing_out_are_refused_for_every_file_tool(
        layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    ctx = ToolContext(workdir=workspace)
    attempts: list[tuple[Tool, dict[str, Any]]] = [
        (read_file, {"path": "link.txt"}),
        (read_file, {"path": "linkdir/secret.txt"}),
        (write_file, {"path": "linkdir/new.txt", "content": "x"}),
        (edit_file, {"path": "link.txt", "old_string": "do", "new_string": "did"}),
        (list_dir, {"path": "linkdir"}),
        (grep, {"pattern": "read", "path": "linkdir"}),
        (apply_patch, {"patch": "--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-do not read\n"
                                "+hacked\n"}),
    ]
    for tool, arguments in attempts:
        with pytest.raises(ToolError, match="outside the workspace"):
            await call_tool(tool, ctx, **arguments)
    assert (outside / "secret.txt").read_text() == "do not read\n"
    assert not (outside / "new.txt").exists()


async def test_glob_skips_symlinks_that_point_out(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    ctx = ToolContext(workdir=workspace)
    assert "secret" not in await call_tool(glob, ctx, pattern="**/*.txt")
    with pytest.raises(ToolError, match="may not contain"):
        await call_tool(glob, ctx, pattern="../outside/*")


async def test_write_outside_is_refused_and_nothing_is_written(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    ctx = ToolContext(workdir=workspace)
    with pytest.raises(ToolError, match="outside the workspace"):
        await call_tool(write_file, ctx, path="../outside/new.txt", content="x")
    assert not (outside / "new.txt").exists()


async def test_allowed_roots_extend_the_workspace(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    ctx = ToolContext(workdir=workspace, services={"allowed_roots": [str(outside)]})
    assert "do not read" in await call_tool(read_file, ctx, path="../outside/secret.txt")


@pytest.mark.parametrize("name", [".env", ".env.local", "server.pem", "tls.key", "id_rsa",
                                  "id_ed25519.pub", "credentials", "credentials.json"])
def test_secret_file_names_are_recognised(tmp_path: Path, name: str) -> None:
    assert is_secret_path(tmp_path / name)


@pytest.mark.parametrize("name", ["env.py", ".env.example", "keys.py", "README.md", "monkey.txt"])
def test_ordinary_names_are_not_secrets(tmp_path: Path, name: str) -> None:
    assert not is_secret_path(tmp_path / name)


def test_files_under_home_ssh_are_secrets() -> None:
    assert is_secret_path(Path.home() / ".ssh" / "config")


async def test_reading_a_secret_needs_approval(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_KEY=s3cr3t\n")
    asked: list[tuple[str, str]] = []

    async def deny(action: str, detail: str) -> bool:
        asked.append((action, detail))
        return False

    async def allow(action: str, detail: str) -> bool:
        return True

    with pytest.raises(ToolError, match="needs the user's approval"):
        await call_tool(read_file, ToolContext(workdir=tmp_path, approve=deny), path=".env")
    assert asked == [("read_secret", "read .env (looks like a secrets file)")]
    with pytest.raises(ToolError, match="needs the user's approval"):  # default: nobody to ask
        await call_tool(read_file, ToolContext(workdir=tmp_path), path=".env")
    text = await call_tool(read_file, ToolContext(workdir=tmp_path, approve=allow), path=".env")
    assert "s3cr3t" in text


async def test_grep_skips_secrets_files(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    (tmp_path / "server.pem").write_text("TOKEN=pem\n")
    (tmp_path / "code.py").write_text("TOKEN = read()\n")
    text = await call_tool(grep, ToolContext(workdir=tmp_path), pattern="TOKEN")
    assert "code.py" in text and "abc" not in text and "pem" not in text


async def test_allowed_roots_setting_reaches_the_tools_of_a_run(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    script = [Reply(tool_calls=[call("read_file", {"path": "../outside/secret.txt"})]),
              Reply(text="ok")]
    for roots, expected in (([], "outside the workspace"), ([str(outside)], "do not read")):
        with FakeModelServer(replies=script) as server:
            agent = Agent("m", base_url=server.base_url, api_key="k", tools=[read_file],
                          workdir=str(workspace), allowed_roots=roots,
                          retry=RetryPolicy(base_delay=0.01))
            result = await agent.run("read it")
        assert expected in next(m.content for m in result.messages if m.role == "tool")
