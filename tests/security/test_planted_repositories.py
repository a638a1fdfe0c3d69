"""Repositories a sandboxed command leaves for git to find later, outside the sandbox: a bare one
(a folder holding `HEAD`, `objects/`, `refs/` and a `config`: git takes it for its git
directory when you work in it, the embedded-bare-repository attack), and a `.git` deep in a
dependency folder (`node_modules/dep/lib/.git`: an editor runs git in the repository of a file
you open there, go-to-definition takes you there). Where the rule must not fire: a bare
repository the user had, a folder that only looks like one, a dependency folder's other files.

Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import command_result, fsmonitor, host_git

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")


def bare_repository(folder: str, canary: Path) -> str:
    """A command making `folder` a bare repository whose config runs `canary`'s command when
    git works there (`core.worktree` makes it usable as a working tree's git directory)."""
    return (f"git init -q --bare {folder} && git --git-dir={folder} config core.bare false && "
            f"git --git-dir={folder} config core.worktree . && git --git-dir={folder} config "
            f"core.fsmonitor '{fsmonitor(canary)}'")


@pytest.mark.parametrize("folder", ["vendor/x", ".", "node_modules/dep/fixture"])
async def test_a_bare_repository_a_command_makes_is_disabled(tmp_path: Path,
                                                              folder: str) -> None:
    # "." makes the workspace itself one: with no `.git` at the top, git takes the top for
    # a git directory at your next `git status` there
    workdir = tmp_path / "work"
    workdir.mkdir()
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(workdir, f"{bare_repository(folder, canary)} && echo made")
    made = workdir / folder
    for where in (made, made / "objects"):
        host_git(where, "status")
    assert not canary.exists()
    assert (made / "HEAD.made-by-command").is_file() and not (made / "HEAD").exists()
    assert (made / "config").is_file()  # what the command made stays, but HEAD
    assert "made" in text and "moved HEAD of a bare repository" in text, text


async def test_a_bare_repository_the_user_had_stays_and_is_read_only(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    fixture = workdir / "tests" / "fixture.git"
    fixture.parent.mkdir(parents=True)
    assert host_git(workdir, "init", "-q", "--bare", str(fixture)).returncode == 0
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(workdir, "git --git-dir=tests/fixture.git config core.fsmonitor "
                                f"'{fsmonitor(canary)}'; touch tests/fixture.git/x; echo end")
    assert "moved" not in text, text
    assert "could not lock config file" in text or "Read-only file system" in text, text
    assert (fixture / "HEAD").is_file() and "fsmonitor" not in (fixture / "config").read_text()


async def test_a_folder_that_only_looks_like_a_bare_repository_is_left_alone(
        tmp_path: Path) -> None:
    # a HEAD file beside `objects/` but no `refs/` (nor `commondir`) is no git directory
    workdir = tmp_path / "work"
    workdir.mkdir()
    text = await command_result(workdir, "mkdir -p data/objects && echo x > data/HEAD && "
                                "mkdir -p notes/refs && echo x > notes/HEAD && echo made")
    assert text == "made\n[exit code 0]", text
    assert (workdir / "data" / "HEAD").is_file() and (workdir / "notes" / "HEAD").is_file()


@pytest.mark.parametrize("folder", ["node_modules/dep/lib",
                                    "node_modules/@scope/dep/node_modules/inner",
                                    ".venv/lib/python3.11/site-packages/pkg"])
async def test_a_repository_made_deep_in_a_dependency_folder_is_moved_aside(
        tmp_path: Path, folder: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(workdir, f"git init -q {folder} && git -C {folder} config "
                                f"core.fsmonitor '{fsmonitor(canary)}' && echo made")
    host_git(workdir / folder, "status")  # the editor, once you open a file there
    assert not canary.exists()
    assert (workdir / folder / ".git.made-by-command").is_dir()
    assert "made" in text and "moved a repository" in text, text


async def test_a_users_repository_in_a_dependency_folder_stays_and_the_folder_can_go(
        tmp_path: Path) -> None:
    # not bound read-only there: a mount point would keep `rm -rf node_modules` (`npm ci`)
    # from working
    workdir = tmp_path / "work"
    dependency = workdir / "node_modules" / "dep"
    dependency.mkdir(parents=True)
    assert host_git(dependency, "init", "-q").returncode == 0
    text = await command_result(workdir, "git -C node_modules/dep status --short && echo seen")
    assert "seen" in text and "moved" not in text, text
    assert (dependency / ".git").is_dir()
    text = await command_result(workdir, "rm -rf node_modules && echo removed")
    assert text == "removed\n[exit code 0]", text
