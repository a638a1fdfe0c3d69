"""grep with both engines (ripgrep and the Python fallback): same output shape, same caps."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopwright import Tool, ToolContext, ToolError
from loopwright.builtin import grep
from loopwright.builtin.search import make_grep

ENGINES = ["ripgrep", "python"]


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import os\n\ndef handler():\n    return os.name\n")
    (tmp_path / "src" / "util.py").write_text("def helper():\n    pass\n")
    (tmp_path / "README.md").write_text("# Handler docs\nsee def handler\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("def handler in git\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("def handler in deps\n")
    (tmp_path / "image.bin").write_bytes(b"\x00def handler\x00")
    return tmp_path


def test_ripgrep_is_installed_so_both_engines_are_exercised() -> None:
    assert shutil.which("rg") is not None, "install ripgrep (apt-get install -y ripgrep)"


@pytest.mark.parametrize("engine", ENGINES)
async def test_matches_print_path_line_and_text(tree: Path, engine: str) -> None:
    tool = make_grep(engine)  # type: ignore[arg-type]
    text = await call_tool(tool, ToolContext(workdir=tree), pattern=r"def \w+\(")
    assert text.splitlines() == ["src/app.py:3:def handler():", "src/util.py:1:def helper():"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_vcs_dependency_and_binary_files_are_skipped(tree: Path, engine: str) -> None:
    tool = make_grep(engine)  # type: ignore[arg-type]
    text = await call_tool(tool, ToolContext(workdir=tree), pattern="def handler")
    assert "README.md:2:see def handler" in text
    assert ".git" not in text and "node_modules" not in text and "image.bin" not in text


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_ignore_case_and_files_only(tree: Path, engine: str) -> None:
    tool = make_grep(engine)  # type: ignore[arg-type]
    ctx = ToolContext(workdir=tree)
    assert await call_tool(tool, ctx, pattern="HANDLER", ignore_case=True, glob="*.md",
                           files_only=True) == "README.md"
    assert "No matches" in await call_tool(tool, ctx, pattern="HANDLER", glob="*.md")


@pytest.mark.parametrize("engine", ENGINES)
async def test_context_lines_use_dashes(tree: Path, engine: str) -> None:
    tool = make_grep(engine)  # type: ignore[arg-type]
    text = await call_tool(tool, ToolContext(workdir=tree), pattern="return os", path="src",
                           context=1)
    assert text.splitlines() == ["src/app.py-3-def handler():", "src/app.py:4:    return os.name"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_results_are_capped_with_a_note(tmp_path: Path, engine: str) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 500)
    tool = make_grep(engine)  # type: ignore[arg-type]
    text = await call_tool(tool, ToolContext(workdir=tmp_path), pattern="hit", max_results=20)
    lines = text.splitlines()
    assert len(lines) == 21 and lines[-1].startswith("[stopped after 20 matches")


@pytest.mark.parametrize("engine", ENGINES)
async def test_huge_lines_are_shortened(tmp_path: Path, engine: str) -> None:
    (tmp_path / "min.js").write_text("var a=1;" * 20_000 + "needle\n")
    tool = make_grep(engine)  # type: ignore[arg-type]
    text = await call_tool(tool, ToolContext(workdir=tmp_path), pattern="needle")
    assert len(text) < 1000 and "min.js:1:" in text


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_bad_regex_is_a_clear_error(tmp_path: Path, engine: str) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    tool = make_grep(engine)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="grep failed"):
        await call_tool(tool, ToolContext(workdir=tmp_path), pattern="(unclosed")


async def test_default_grep_is_read_only_core_and_searches_one_file(tree: Path) -> None:
    assert grep.read_only and grep.core
    text = await call_tool(grep, ToolContext(workdir=tree), pattern="import", path="src/app.py")
    assert text == "src/app.py:1:import os"


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_fifo_in_the_tree_does_not_hang_the_search(tree: Path, engine: str) -> None:
    # a command can leave a named pipe: opening it for reading waits for a writer for ever
    fifo = tree / "src" / "pipe.py"
    os.mkfifo(fifo)
    tool = make_grep(engine)  # type: ignore[arg-type]
    try:
        text = await asyncio.wait_for(
            call_tool(tool, ToolContext(workdir=tree), pattern=r"def \w+\("), 20)
    finally:  # release a reader stuck on it (the old behaviour), or the thread never ends
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert text.splitlines() == ["src/app.py:3:def handler():", "src/util.py:1:def helper():"]
