"""The review stage sits above the tools and below the loop: the tools never import it or the
loop (the cycle `guards.py` ↔ `tools/` of issue 28 stays broken; guards.py itself is gone), and
the note registry is a leaf every layer may write notes from."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "loopwright"


def imported(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_tools_never_import_the_review_stage_or_the_guards() -> None:
    for path in (SRC / "tools").rglob("*.py"):
        bad = {m for m in imported(path)
               if m.startswith(("loopwright.review", "loopwright.guards", "loopwright.loop"))}
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_the_review_stage_never_imports_the_loop_or_the_agent() -> None:
    for path in (SRC / "review").rglob("*.py"):
        bad = {m for m in imported(path) if m.startswith(
            ("loopwright.loop", "loopwright.agent", "loopwright.run_state", "loopwright.guards"))}
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_the_note_registry_is_a_leaf() -> None:
    mine = {m for m in imported(SRC / "notes.py") if m.startswith("loopwright")}
    assert all(m.startswith(("loopwright.messages", "loopwright.interrupted")) for m in mine), mine
