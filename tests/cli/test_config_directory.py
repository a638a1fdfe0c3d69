"""A `loopwright.toml` that is a directory is a configuration error saying so, not silently
ignored with every setting it was meant to hold (a new user's walk-through, item 10)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env


def run(server: FakeModelServer, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", "run", "Hi", "--model", "m",
                           "--base-url", server.base_url], cwd=cwd, env=cli_env(cwd, **env),
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("where", ["project", "LOOPWRIGHT_CONFIG", "user"])
def test_a_config_path_that_is_a_directory_exits_6_naming_it(tmp_path: Path, where: str) -> None:
    env: dict[str, str] = {}
    if where == "project":
        directory = tmp_path / "loopwright.toml"
    elif where == "user":
        directory = tmp_path / ".config" / "loopwright" / "loopwright.toml"
    else:
        directory = tmp_path / "settings.toml"
        env["LOOPWRIGHT_CONFIG"] = str(directory)
    directory.mkdir(parents=True)
    with FakeModelServer([]) as server:
        proc = run(server, tmp_path, **env)
        assert server.model_requests == []
    assert proc.returncode == 6, proc.stderr
    assert proc.stderr == (f"loopwright: {directory} is a directory, not a settings file: rename "
                           "or remove it (settings are read from a file of that name)\n")


def test_a_directory_beside_it_named_otherwise_is_no_concern(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml.d").mkdir()
    (tmp_path / "loopwright").mkdir()
    with FakeModelServer([Reply("ok")]) as server:
        proc = run(server, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"


def test_a_loopwright_config_naming_no_file_exits_6_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "my-settings.toml"
    with FakeModelServer([]) as server:
        proc = run(server, tmp_path, LOOPWRIGHT_CONFIG=str(missing))
        assert server.model_requests == []
    assert proc.returncode == 6, proc.stderr
    assert proc.stderr == (f"loopwright: LOOPWRIGHT_CONFIG names {missing}, which does not "
                           "exist: create it, or unset LOOPWRIGHT_CONFIG\n")
