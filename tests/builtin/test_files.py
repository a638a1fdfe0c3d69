"""read_file, write_file and edit_file on real files in a temporary workspace."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from loopwright import Tool, ToolContext, ToolError
from loopwright.builtin import edit_file, read_file, write_file
from loopwright.builtin.files import MAX_BYTES


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workdir=tmp_path)


# --- read_file ---


async def test_read_file_numbers_lines(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    assert await call_tool(read_file, ctx, path="a.txt") == "     1\talpha\n     2\tbeta\n"


async def test_read_file_caps_at_2000_lines_and_says_where_to_continue(
        ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"l{n}\n" for n in range(1, 2501)))
    text = await call_tool(read_file, ctx, path="long.txt")
    assert text.count("\n") < 2010
    assert "  2000\tl2000" in text and "l2001" not in text
    assert "Showing lines 1-2000 of 2500" in text and "offset=2001" in text
    rest = await call_tool(read_file, ctx, path="long.txt", offset=2001)
    assert rest.startswith("  2001\tl2001") and rest.rstrip().endswith("l2500")


async def test_read_file_caps_at_50_kb(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("x" * 999 + "\n") * 200)  # 200 KB in 200 lines
    text = await call_tool(read_file, ctx, path="wide.txt")
    assert len(text.encode()) <= MAX_BYTES + 200
    assert "Call read_file with offset=" in text


async def test_read_file_offset_and_limit(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n4\n5\n")
    text = await call_tool(read_file, ctx, path="a.txt", offset=2, limit=2)
    assert text.startswith("     2\t2\n     3\t3\n")
    assert "offset=4" in text


async def test_read_file_past_the_end_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n")
    with pytest.raises(ToolError, match=r"past the end.*2 lines"):
        await call_tool(read_file, ctx, path="a.txt", offset=9)


async def test_read_file_describes_binary_and_image_files(ctx: ToolContext,
                                                          tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02garbage" * 100)
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    assert "binary file" in await call_tool(read_file, ctx, path="blob.bin")
    image = await call_tool(read_file, ctx, path="pic.png")
    assert "PNG image" in image and "72 bytes" in image


async def test_read_file_missing_file_suggests_close_names(ctx: ToolContext,
                                                           tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("x")
    with pytest.raises(ToolError, match=r"Did you mean: config\.yaml"):
        await call_tool(read_file, ctx, path="config.yml")


async def test_read_file_records_the_read_stamp(ctx: ToolContext, tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("x\n")
    await call_tool(read_file, ctx, path="a.txt")
    assert ctx.state["read_files"][str(target)] == target.stat().st_mtime_ns


# --- write_file ---


async def test_write_file_creates_parents_and_reports(ctx: ToolContext, tmp_path: Path) -> None:
    text = await call_tool(write_file, ctx, path="deep/dir/new.py", content="print(1)\n")
    assert (tmp_path / "deep/dir/new.py").read_text() == "print(1)\n"
    assert text.startswith("Created deep/dir/new.py (1 lines")


async def test_write_file_keeps_the_file_mode(ctx: ToolContext, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    await call_tool(write_file, ctx, path="run.sh", content="new")
    assert script.stat().st_mode & 0o777 == 0o755


async def test_write_file_refuses_a_file_changed_since_read(ctx: ToolContext,
                                                            tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("v1\n")
    await call_tool(read_file, ctx, path="a.txt")
    target.write_text("changed by someone else\n")
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10_000_000))
    with pytest.raises(ToolError, match="changed on disk since you last read it"):
        await call_tool(write_file, ctx, path="a.txt", content="mine\n")
    assert target.read_text() == "changed by someone else\n"


# --- edit_file ---


async def test_edit_file_replaces_a_unique_match(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    text = await call_tool(edit_file, ctx, path="m.py", old_string="return 1",
                           new_string="return 2")
    assert (tmp_path / "m.py").read_text() == "def f():\n    return 2\n"
    assert "replaced 1 occurrence at line 2" in text and "return 2" in text


async def test_edit_file_missing_match_shows_closest_lines(ctx: ToolContext,
                                                           tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import os\n\ndef compute_total(items):\n    return 0\n")
    with pytest.raises(ToolError) as info:
        await call_tool(edit_file, ctx, path="m.py", old_string="def compute_totals(items):",
                        new_string="x")
    message = str(info.value)
    assert "was not found" in message
    assert "     3\tdef compute_total(items):" in message


async def test_edit_file_whitespace_only_difference_is_named(ctx: ToolContext,
                                                             tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("if x:\n    y = 1\n")
    with pytest.raises(ToolError, match="matches if whitespace is ignored"):
        await call_tool(edit_file, ctx, path="m.py", old_string="if x:\n  y = 1",
                        new_string="z")


async def test_edit_file_ambiguous_match_lists_the_candidates(ctx: ToolContext,
                                                              tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 2\na = 1\n")
    with pytest.raises(ToolError, match=r"appears 2 times .*lines 1, 3"):
        await call_tool(edit_file, ctx, path="m.py", old_string="a = 1", new_string="a = 9")
    await call_tool(edit_file, ctx, path="m.py", old_string="a = 1", new_string="a = 9",
                    replace_all=True)
    assert (tmp_path / "m.py").read_text() == "a = 9\nb = 2\na = 9\n"


async def test_edit_file_refuses_a_file_changed_since_read(ctx: ToolContext,
                                                           tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("x = 1\n")
    await call_tool(read_file, ctx, path="m.py")
    target.write_text("x = 1\ny = 2\n")
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10_000_000))
    with pytest.raises(ToolError, match="changed on disk"):
        await call_tool(edit_file, ctx, path="m.py", old_string="x = 1", new_string="x = 3")
    await call_tool(read_file, ctx, path="m.py")  # reading again clears the way
    await call_tool(edit_file, ctx, path="m.py", old_string="x = 1", new_string="x = 3")
    assert target.read_text() == "x = 3\ny = 2\n"


async def test_consecutive_edits_do_not_trip_the_staleness_check(ctx: ToolContext,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a\nb\n")
    await call_tool(read_file, ctx, path="m.py")
    await call_tool(edit_file, ctx, path="m.py", old_string="a", new_string="A")
    await call_tool(edit_file, ctx, path="m.py", old_string="b", new_string="B")
    assert (tmp_path / "m.py").read_text() == "A\nB\n"


async def test_edit_file_matches_lf_text_in_a_crlf_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call_tool(edit_file, ctx, path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert (tmp_path / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_tools_declare_read_only_and_core_honestly() -> None:
    assert read_file.read_only and read_file.core
    assert not write_file.read_only and not edit_file.read_only
    assert write_file.core and edit_file.core
    schema = read_file.parameters
    assert schema["required"] == ["path"] and "ctx" not in schema["properties"]
    assert schema["properties"]["limit"]["maximum"] == 2000


async def test_read_file_refuses_a_named_pipe_instead_of_waiting_on_it(
        ctx: ToolContext, tmp_path: Path) -> None:
    # opening a FIFO for reading waits for a writer: the worker thread would never return,
    # and a few of them stop every tool of the process (the default executor is small)
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    try:
        with pytest.raises(ToolError, match="not a regular file"):
            await asyncio.wait_for(call_tool(read_file, ctx, path="pipe.txt"), 20)
    finally:  # release a reader stuck on it (the old behaviour), or its thread never ends
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
