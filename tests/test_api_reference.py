"""The API reference (docs/api_reference.py, pdoc) builds from the docstrings without a warning,
and documents every public name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import loopwright

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "api_reference.py"


def test_the_api_reference_builds_and_documents_every_public_name(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("api_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    result = script.build(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Warn" not in result.stdout + result.stderr, result.stdout + result.stderr
    for module in script.MODULES:
        assert (tmp_path / (module.replace(".", "/") + ".html")).is_file(), module
    page = (tmp_path / "loopwright.html").read_text(encoding="utf-8")
    for name in loopwright.__all__:
        assert f'id="{name}"' in page, f"{name} is not in the reference"
    assert "Run to the end and return the result." in page  # Agent.run's docstring
