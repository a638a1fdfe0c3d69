"""`python -m loopwright` in a project a command could write to: the working directory is first
on Python's module path there, so a module named like one loopwright imports (`typing.py`,
`__future__.py`, `httpx.py`…) ran as loopwright's own, outside any sandbox, at the next start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# (`importlib.py` is imported by Python's own -m start-up, before this package: not coverable)
PLANTED = ("__future__", "typing", "httpx", "rich", "typer", "pydantic", "json",
           "enum", "re")


def _plant(workspace: Path) -> None:
    for name in PLANTED:
        (workspace / f"{name}.py").write_text(f"print('PLANTED {name} RAN')\n")


@pytest.mark.parametrize("argv", [["--help"], ["models", "--help"]])
def test_python_dash_m_loopwright_imports_nothing_from_the_working_directory(
        tmp_path: Path, argv: list[str]) -> None:
    _plant(tmp_path)
    done = subprocess.run([sys.executable, "-m", "loopwright", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "PLANTED" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stderr


def test_a_library_user_keeps_the_working_directory_on_the_path(tmp_path: Path) -> None:
    (tmp_path / "helper_module.py").write_text("VALUE = 7\n")
    (tmp_path / "main.py").write_text(
        "import loopwright\nimport helper_module\nprint(helper_module.VALUE)\n")
    done = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "7", done.stderr


def test_another_program_run_with_dash_m_keeps_the_working_directory(tmp_path: Path) -> None:
    """`python -m yourapp`, whose package imports loopwright while Python is still finding it:
    the working directory is the user's own, and stays on the path for it."""
    (tmp_path / "helper_module.py").write_text("VALUE = 7\n")
    app = tmp_path / "yourapp"
    app.mkdir()
    (app / "__init__.py").write_text("import loopwright\n")
    (app / "__main__.py").write_text("import helper_module\nprint(helper_module.VALUE)\n")
    done = subprocess.run([sys.executable, "-m", "yourapp"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "7", done.stderr
