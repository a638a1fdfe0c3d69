"""`loopwright models` as a person reads it: the table where it fits, and in a narrow terminal
every model name and URL whole, never cut to "…"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.testing import FakeModelServer
from shared_helpers import cli_env

MODEL = "qwen2.5-coder-1.5b-instruct"


def _models(tmp_path: Path, columns: int) -> tuple[str, str]:
    """What `models` prints at `columns`, and the server's base URL."""
    with FakeModelServer(context_window=16_384, flavor="llamacpp", model=MODEL) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "models", "--model", MODEL, "--base-url",
             server.base_url, "--no-local"], cwd=tmp_path,
            env=cli_env(tmp_path, COLUMNS=str(columns)), capture_output=True, text=True,
            timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout, server.base_url


@pytest.mark.parametrize("columns", [40, 60])
def test_a_narrow_terminal_gets_each_provider_whole(tmp_path: Path, columns: int) -> None:
    shown, base_url = _models(tmp_path, columns)
    assert "…" not in shown and "┃" not in shown  # no table squeezed to cut cells
    assert f"base URL {base_url}" in shown
    assert all(len(line) <= columns for line in shown.splitlines())
    assert "primary · custom" in shown and f"model    {MODEL}" in shown
    assert "window   16,384 (probe:/props)" in shown


def test_a_wide_terminal_keeps_the_table(tmp_path: Path) -> None:
    shown, base_url = _models(tmp_path, 120)
    assert "Providers and context windows" in shown and "┃ role" in shown
    assert base_url in shown and MODEL in shown and "16,384" in shown and "…" not in shown
