"""A path is checked, then opened: a symlink swapped in between (here while the user is asked to
approve, the widest gap there is) must not redirect the read or the write outside the workspace.
Replayed through the public file tools, with the swap made by the approval callback."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from loopwright import Tool, ToolContext, ToolError
from loopwright.builtin import apply_patch, edit_file, read_file, write_file

SECRET = "outside-secret-4711"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "work"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text(f"{SECRET}\n")
    return workspace, outside


def swapping(path: Path, to: Path) -> Callable[[str, str], Awaitable[bool]]:
    async def approve(title: str, detail: str) -> bool:
        if path.is_dir() and not path.is_symlink():
            path.rename(path.with_name(path.name + ".moved"))
        else:
            path.unlink()
        path.symlink_to(to)
        return True

    return approve


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


async def test_read_of_a_secret_swapped_for_a_link_while_approving_is_refused(
        layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / ".env").write_text("TOKEN=inside\n")
    ctx = ToolContext(workdir=workspace,
                      approve=swapping(workspace / ".env", outside / "target.txt"))
    with pytest.raises(ToolError, match="symlink"):
        await call_tool(read_file, ctx, path=".env")


async def test_the_harmless_twin_reads_the_approved_secret(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    (workspace / ".env").write_text("TOKEN=inside\n")

    async def allow(title: str, detail: str) -> bool:
        return True

    text = await call_tool(read_file, ToolContext(workdir=workspace, approve=allow), path=".env")
    assert "TOKEN=inside" in text


async def test_edit_of_a_protected_file_swapped_for_a_link_never_touches_the_target(
        layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "loopwright.toml").write_text(f"{SECRET}\n")
    ctx = ToolContext(workdir=workspace,
                      approve=swapping(workspace / "loopwright.toml", outside / "target.txt"))
    with pytest.raises(ToolError):
        await call_tool(edit_file, ctx, path="loopwright.toml", old_string=SECRET,
                        new_string="pwned")
    assert (outside / "target.txt").read_text() == f"{SECRET}\n"


async def test_a_directory_swapped_for_a_link_while_approving_gets_no_write(
        layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "conf").mkdir()
    ctx = ToolContext(workdir=workspace, approve=swapping(workspace / "conf", outside))
    with pytest.raises(ToolError, match="outside the workspace"):
        await call_tool(write_file, ctx, path="conf/loopwright.toml", content="pwned\n")
    assert sorted(os.listdir(outside)) == ["target.txt"]


async def test_a_patch_of_a_file_swapped_for_a_link_is_refused(
        layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "loopwright.toml").write_text(f"{SECRET}\n")
    ctx = ToolContext(workdir=workspace,
                      approve=swapping(workspace / "loopwright.toml", outside / "target.txt"))
    patch = ("--- a/loopwright.toml\n+++ b/loopwright.toml\n@@ -1 +1 @@\n"
             f"-{SECRET}\n+pwned\n")
    with pytest.raises(ToolError):
        await call_tool(apply_patch, ctx, patch=patch)
    assert (outside / "target.txt").read_text() == f"{SECRET}\n"
