"""apply_patch: unified diffs across files, all hunks or none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopwright import Tool, ToolContext, ToolError
from loopwright.builtin import apply_patch


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    (tmp_path / "b.py").write_text("alpha\nbeta\n")
    return tmp_path


MULTI = """\
diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
@@ -5,3 +5,4 @@
 five
 six
+six and a half
 seven
--- a/b.py
+++ b/b.py
@@ -1,2 +1,2 @@
-alpha
+ALPHA
 beta
--- /dev/null
+++ b/new/c.py
@@ -0,0 +1,2 @@
+print("new")
+print("file")
"""


async def test_applies_hunks_across_files_and_creates_new_ones(repo: Path) -> None:
    text = await call_tool(apply_patch, ToolContext(workdir=repo), patch=MULTI)
    assert "3 file(s)" in text
    expected = "one\nTWO\nthree\nfour\nfive\nsix\nsix and a half\nseven\n"
    assert (repo / "a.py").read_text() == expected
    assert (repo / "b.py").read_text() == "ALPHA\nbeta\n"
    assert (repo / "new" / "c.py").read_text() == 'print("new")\nprint("file")\n'


async def test_one_failing_hunk_changes_nothing(repo: Path) -> None:
    broken = MULTI.replace(" beta\n", " gamma\n")  # b.py's hunk no longer matches
    with pytest.raises(ToolError, match=r"(?s)hunk 1 of b.py does not apply.*nothing was changed"):
        await call_tool(apply_patch, ToolContext(workdir=repo), patch=broken)
    assert (repo / "a.py").read_text().startswith("one\ntwo\n")
    assert (repo / "b.py").read_text() == "alpha\nbeta\n"
    assert not (repo / "new").exists()


async def test_wrong_line_numbers_are_tolerated(repo: Path) -> None:
    patch = "--- a/a.py\n+++ b/a.py\n@@ -40,2 +40,2 @@\n four\n-five\n+FIVE\n"
    await call_tool(apply_patch, ToolContext(workdir=repo), patch=patch)
    assert "four\nFIVE\nsix" in (repo / "a.py").read_text()


async def test_deleting_a_file(repo: Path) -> None:
    patch = "--- a/b.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-alpha\n-beta\n"
    text = await call_tool(apply_patch, ToolContext(workdir=repo), patch=patch)
    assert "deleted b.py" in text and not (repo / "b.py").exists()


async def test_missing_newline_at_end_of_file(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("a\nb")
    patch = ("--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
             "+c\n\\ No newline at end of file\n")
    await call_tool(apply_patch, ToolContext(workdir=tmp_path), patch=patch)
    assert (tmp_path / "n.txt").read_text() == "a\nc"


async def test_crlf_files_keep_their_line_endings(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"x\r\ny\r\n")
    patch = "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n"
    await call_tool(apply_patch, ToolContext(workdir=tmp_path), patch=patch)
    assert (tmp_path / "w.txt").read_bytes() == b"x\r\nz\r\n"


async def test_removed_sql_comment_lines_are_not_mistaken_for_headers(tmp_path: Path) -> None:
    (tmp_path / "q.sql").write_text("-- old comment\nselect 1;\n")
    patch = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- old comment\n+++ new comment\n" \
            " select 1;\n"
    await call_tool(apply_patch, ToolContext(workdir=tmp_path), patch=patch)
    assert (tmp_path / "q.sql").read_text() == "++ new comment\nselect 1;\n"


async def test_creating_a_file_that_exists_is_refused(repo: Path) -> None:
    patch = "--- /dev/null\n+++ b/b.py\n@@ -0,0 +1 @@\n+x\n"
    with pytest.raises(ToolError, match="already exists"):
        await call_tool(apply_patch, ToolContext(workdir=repo), patch=patch)


@pytest.mark.parametrize("patch,message", [
    ("just some text", "no file headers"),
    ("@@ -1 +1 @@\n-a\n+b\n", "before any"),
])
async def test_malformed_patches_are_explained(tmp_path: Path, patch: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await call_tool(apply_patch, ToolContext(workdir=tmp_path), patch=patch)
