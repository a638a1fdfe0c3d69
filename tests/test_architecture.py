"""The layers are a contract (import-linter, `[tool.importlinter]` in pyproject.toml): errors and
messages at the bottom, then the wire formats, the endpoints, the tools, the loop, the agent,
serve and batch, and the CLI at the top; nothing imports upward at module level."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([LINT_IMPORTS, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=src, env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contract_is_kept() -> None:
    result = lint_imports(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The contract can fail: the same tree with messages.py importing the agent breaks it."""
    shutil.copytree(ROOT / "src" / "loopwright", tmp_path / "loopwright",
                    ignore=shutil.ignore_patterns("__pycache__", "static"))
    messages = tmp_path / "loopwright" / "messages.py"
    messages.write_text(messages.read_text(encoding="utf-8") + "\nimport loopwright.agent\n",
                        encoding="utf-8")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "loopwright.messages is not allowed to import loopwright.agent" in result.stdout
