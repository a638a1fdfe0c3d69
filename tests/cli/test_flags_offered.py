"""A command offers only the flags it acts on: `--output-lines` and `--verbose` shape what a
terminal shows, and the commands an editor or another agent starts have no terminal to show it
on; offered there, they were accepted and silently did nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared_helpers import cli_env

TERMINAL_ONLY = ("--output-lines", "--verbose")


def _loopwright(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=tmp_path,
                          env=cli_env(tmp_path, COLUMNS="200"), capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("command", ["acp", "mcp-server", "serve"])
def test_a_command_without_a_terminal_refuses_the_terminals_flags(tmp_path: Path,
                                                                  command: str) -> None:
    shown = _loopwright(tmp_path, command, "--help").stdout
    assert "--model" in shown  # the agent's flags are there
    for flag in TERMINAL_ONLY:
        assert flag not in shown
        refused = _loopwright(tmp_path, command, flag)
        assert refused.returncode == 2 and "No such option" in refused.stderr


@pytest.mark.parametrize("command", ["run", "chat"])
def test_the_terminal_commands_keep_them(tmp_path: Path, command: str) -> None:
    shown = _loopwright(tmp_path, command, "--help").stdout
    assert all(flag in shown for flag in TERMINAL_ONLY)
