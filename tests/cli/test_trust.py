"""`loopwright trust` given a path that is not a project directory: a typo, or the config file
itself. Each says what is wrong with the path (it said "nothing to trust" in a directory that does
not exist), and trusts nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared_helpers import cli_env


def _trust(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", "trust", *args], cwd=cwd,
                          env=cli_env(cwd), capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("given", ["projct", "..\\project"])  # a typo; a Windows-style path
def test_a_directory_that_does_not_exist_is_named_as_such(tmp_path: Path, given: str) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "loopwright.toml").write_text("max_turns = 3\n")
    done = _trust(tmp_path, given)
    assert done.returncode == 1
    assert done.stderr == f"loopwright: there is no directory {tmp_path / given}\n"
    assert _trust(tmp_path, "--list").stdout.startswith("No trusted projects.")


def test_the_config_file_itself_points_to_its_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "loopwright.toml").write_text("max_turns = 3\n")
    done = _trust(tmp_path, "project/loopwright.toml")
    assert done.returncode == 1
    assert done.stderr == (f"loopwright: {project / 'loopwright.toml'} is a file: trust the "
                           f"directory it is in (loopwright trust {project})\n")
    trusted = _trust(tmp_path, "project")  # the directory, as told: trusted
    assert trusted.returncode == 0 and trusted.stdout.startswith(f"Trusted {project} ")


def test_an_existing_directory_with_nothing_to_trust_still_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = _trust(tmp_path, "empty")
    assert done.returncode == 1 and "nothing to trust" in done.stderr
