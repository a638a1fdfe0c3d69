"""`loopwright memory list|show|rm` over real memory files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from loopwright.builtin.memory import MemoryFiles


def invoke(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    from loopwright.cli.main import app

    result = CliRunner().invoke(app, ["memory", *args],
                                env={"LOOPWRIGHT_MEMORY_DIR": str(tmp_path / "mem")})
    return result.exit_code, result.stdout, result.stderr


def test_list_show_and_rm(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path / "mem")
    files.add("memory", "Saved by hand.")
    assert files.learn("memory", "Uses uv for dependencies.", session_id="abc123def4567") \
        == "added"
    files.add("user", "Likes tables.")
    code, out, _ = invoke(tmp_path, "list")
    assert code == 0
    assert out.splitlines() == [
        "M1   Saved by hand.",
        "M2   Uses uv for dependencies. (learned in session abc123def456)",
        "U1   Likes tables."]
    rows = [json.loads(line) for line in invoke(tmp_path, "list", "--json")[1].splitlines()]
    assert [(r["id"], r["file"], r["session"]) for r in rows] == [
        ("M1", "memory", None), ("M2", "memory", "abc123def456"), ("U1", "user", None)]
    code, out, _ = invoke(tmp_path, "show", "m2")
    assert code == 0 and "learned in session abc123def456" in out and "MEMORY.md" in out
    code, out, _ = invoke(tmp_path, "rm", "M1")
    assert code == 0 and "Removed M1" in out
    assert files.entries("memory") == ["Uses uv for dependencies. (learned in session "
                                       "abc123def456)"]
    code, _, err = invoke(tmp_path, "rm", "M9")
    assert code == 1 and "no memory entry 'M9'" in err


def test_an_empty_memory_says_where_it_looked(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path, "list")
    assert code == 0 and f"No memory entries in {tmp_path / 'mem'}" in out


def test_list_and_show_never_send_a_terminal_escape(tmp_path: Path) -> None:
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "MEMORY.md").write_text("Hello \x1b]0;pwned\x07 there\u202e.\n")
    code, listed, _ = invoke(tmp_path, "list")
    assert code == 0 and "M1   Hello \\x1b]0;pwned\\x07 there\\u202e." in listed
    code, shown, _ = invoke(tmp_path, "show", "M1")
    assert code == 0 and "\x1b" not in shown and "\u202e" not in shown
    code, _, err = invoke(tmp_path, "show", "\x1b[2J")
    assert code == 1 and "\x1b" not in err
