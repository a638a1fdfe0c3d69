"""A repository below the top of the workspace (a vendored one, `vendor/x/.git`, read-only to
every command) has its configuration's includes and hooks directory protected as the top's
are: a file its `.git/config` includes (`include.path`, `includeIf.*.path`) is read-only where
it exists and moved aside when a command makes it, and the directory its `core.hooksPath`
names is read-only. Otherwise a command writes a `core.fsmonitor` or a hook there, and the
user's `git status` or `git commit` inside that repository (or VS Code's git extension, which
runs git in the repositories it finds below the folder) runs it.

Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import command_result, fsmonitor, host_git, run_calls_asking

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

COMMIT = ("-c", "user.name=u", "-c", "user.email=u@x")


def vendored(tmp_path: Path, *config: tuple[str, str]) -> tuple[Path, Path]:
    """A workspace (itself a repository) holding the repository `vendor/x` set with `config`."""
    workdir = tmp_path / "work"
    nested = workdir / "vendor" / "x"
    nested.mkdir(parents=True)
    for repository in (workdir, nested):
        assert host_git(repository, "init", "-q").returncode == 0
    for key, value in config:
        assert host_git(nested, "config", key, value).returncode == 0
    return workdir, nested


@pytest.mark.parametrize("key", ["include.path", "includeIf.onbranch:main.path"])
async def test_a_file_a_nested_repository_includes_is_read_only(tmp_path: Path, key: str
                                                                 ) -> None:
    workdir, nested = vendored(tmp_path, (key, "../team.gitconfig"))
    shared = nested / "team.gitconfig"
    shared.write_text("[user]\n\tname = x\n")
    canary = tmp_path / "GIT-RAN"
    text = await command_result(workdir, "printf '[core]\\n\\tfsmonitor = "
                                f"{fsmonitor(canary)}\\n' >> vendor/x/team.gitconfig; "
                                "echo x > vendor/x/other.gitconfig && echo end")
    assert "Read-only file system" in text and "end" in text, text
    assert "fsmonitor" not in shared.read_text()
    host_git(nested, "status")
    assert not canary.exists()
    # must not fire: a file of that repository no configuration includes stays writable
    assert (nested / "other.gitconfig").read_text() == "x\n"


async def test_a_missing_file_a_nested_repository_includes_is_moved_aside_once_made(
        tmp_path: Path) -> None:
    workdir, nested = vendored(tmp_path, ("include.path", "../.gitconfig.local"))
    canary = tmp_path / "GIT-RAN"
    text = await command_result(workdir, "printf '[core]\\n\\tfsmonitor = "
                                f"{fsmonitor(canary)}\\n' > vendor/x/.gitconfig.local && "
                                "echo end")
    assert "end" in text, text
    host_git(nested, "status")
    assert not canary.exists()
    assert (nested / ".gitconfig.local.made-by-command").is_file(), text
    assert "loopwright moved .gitconfig.local" in text and "vendor/x/.gitconfig.local" in text, \
        text


async def test_the_hooks_directory_of_a_nested_repository_is_read_only(tmp_path: Path) -> None:
    workdir, nested = vendored(tmp_path, ("core.hooksPath", ".githooks"))
    (nested / ".githooks").mkdir()
    canary = tmp_path / "HOOK-RAN"
    text = await command_result(workdir, f"printf '#!/bin/sh\\ntouch {canary}\\n' > "
                                "vendor/x/.githooks/pre-commit; chmod +x "
                                "vendor/x/.githooks/pre-commit; echo end")
    assert "end" in text, text
    host_git(nested, *COMMIT, "commit", "-q", "--allow-empty", "-m", "1")
    assert not canary.exists(), text


async def test_a_file_a_bare_repository_below_the_top_includes_is_read_only(
        tmp_path: Path) -> None:
    # a test's fixture repository (`fixtures/lib.git`): git takes the folder for its git
    # directory when you work in it, and runs the pager its config (or an include) names
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert host_git(workdir, "init", "-q").returncode == 0
    bare = workdir / "fixtures" / "lib.git"
    assert host_git(workdir, "init", "-q", "--bare", str(bare)).returncode == 0
    assert host_git(bare, "config", "include.path", "../team.gitconfig").returncode == 0
    shared = workdir / "fixtures" / "team.gitconfig"
    shared.write_text("[user]\n\tname = x\n")
    canary = tmp_path / "PAGER-RAN"
    text = await command_result(workdir, f"printf '[core]\\n\\tpager = touch {canary}\\n' >> "
                                "fixtures/team.gitconfig; echo end")
    assert "Read-only file system" in text and "end" in text, text
    assert "pager" not in shared.read_text()


async def test_file_tools_ask_before_writing_a_file_a_nested_repository_includes(
        tmp_path: Path) -> None:
    workdir, nested = vendored(tmp_path, ("include.path", "../team.gitconfig"))
    (nested / "team.gitconfig").write_text("[user]\n\tname = x\n")
    planted = {"path": "vendor/x/team.gitconfig", "content": "[core]\n\tfsmonitor = touch x\n"}
    other = {"path": "vendor/x/other.gitconfig", "content": "x\n"}  # must not ask
    [result, _], asked = await run_calls_asking(workdir, ("write_file", planted),
                                                ("write_file", other))
    assert len(asked) == 1 and "vendor/x/team.gitconfig" in asked[0], asked
    assert "fsmonitor" not in (nested / "team.gitconfig").read_text(), result
    assert (nested / "other.gitconfig").read_text() == "x\n"


async def test_a_file_a_nested_repository_with_a_gitdir_file_includes_is_read_only(
        tmp_path: Path) -> None:
    # `vendor/x/.git` is a `gitdir:` file: its config is read where that points
    workdir = tmp_path / "work"
    nested = workdir / "vendor" / "x"
    nested.mkdir(parents=True)
    (workdir / ".gitdirs").mkdir()
    assert host_git(workdir, "init", "-q").returncode == 0
    assert host_git(nested, "init", "-q", "--separate-git-dir",
                    str(workdir / ".gitdirs" / "x")).returncode == 0
    assert host_git(nested, "config", "include.path",
                    "../../vendor/x/team.gitconfig").returncode == 0
    shared = nested / "team.gitconfig"
    shared.write_text("[user]\n\tname = x\n")
    text = await command_result(workdir, "printf '[core]\\n\\tfsmonitor = x\\n' >> "
                                "vendor/x/team.gitconfig; echo end")
    assert "Read-only file system" in text and "end" in text, text
    assert "fsmonitor" not in shared.read_text()
