"""list_dir and glob on real directory trees."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loopwright import Tool, ToolContext, ToolError
from loopwright.builtin import glob, list_dir
from loopwright.builtin.listing import MAX_ENTRIES


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


async def test_list_dir_shows_dirs_first_with_sizes(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("12345")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    text = await call_tool(list_dir, ToolContext(workdir=tmp_path))
    assert text.splitlines() == ["./", "pkg/", "b.txt  (5 B)"]


async def test_list_dir_descends_but_skips_noise(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "node_modules" / "dep").mkdir(parents=True)
    text = await call_tool(list_dir, ToolContext(workdir=tmp_path), depth=3)
    assert "  mod.py  (0 B)" in text.splitlines()
    assert "node_modules/" in text and "dep/" not in text


async def test_list_dir_caps_entries(tmp_path: Path) -> None:
    for n in range(MAX_ENTRIES + 25):
        (tmp_path / f"f{n:04}.txt").write_text("")
    text = await call_tool(list_dir, ToolContext(workdir=tmp_path))
    assert "[25 more entries not shown" in text


async def test_list_dir_on_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")
    with pytest.raises(ToolError, match="is a file"):
        await call_tool(list_dir, ToolContext(workdir=tmp_path), path="a.txt")


async def test_glob_finds_files_newest_first(tmp_path: Path) -> None:
    (tmp_path / "src" / "deep").mkdir(parents=True)
    old, new = tmp_path / "src" / "old.py", tmp_path / "src" / "deep" / "new.py"
    old.write_text("")
    new.write_text("")
    os.utime(old, (1_000_000, 1_000_000))
    (tmp_path / "notes.md").write_text("")
    text = await call_tool(glob, ToolContext(workdir=tmp_path), pattern="**/*.py")
    assert text.splitlines() == ["src/deep/new.py", "src/old.py"]


async def test_glob_relative_to_a_path_and_no_match_message(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    ctx = ToolContext(workdir=tmp_path)
    assert await call_tool(glob, ctx, pattern="*.py", path="src") == "src/a.py"
    assert "No files match" in await call_tool(glob, ctx, pattern="*.rs")


async def test_listing_tools_are_read_only() -> None:
    assert list_dir.read_only and glob.read_only
