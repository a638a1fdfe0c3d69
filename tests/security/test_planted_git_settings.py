"""Other ways a sandboxed command could have git run something later, outside the sandbox, each
held: a configuration file the repository's config includes under a condition (`includeIf`,
whatever the condition), one it includes that is missing (made by a command: moved aside), a
`.gitmodules` whose submodule says `update = !command` and a `.gitattributes` naming a filter,
diff or merge driver (git takes commands from the configuration only, never from those).

Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import command_result, fsmonitor, host_git

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

COMMIT = ("-c", "user.name=u", "-c", "user.email=u@x", "-c", "protocol.file.allow=always")


@pytest.mark.parametrize("condition", ["gitdir:/nowhere/", "onbranch:main", "hasconfig:x.y:z"])
async def test_a_config_file_included_under_any_condition_is_read_only(
        tmp_path: Path, condition: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert host_git(workdir, "init", "-q").returncode == 0
    shared = workdir / "team.gitconfig"
    shared.write_text("[user]\n\tname = x\n")
    assert host_git(workdir, "config", f"includeIf.{condition}.path",
                    "../team.gitconfig").returncode == 0
    canary = tmp_path / "GIT-RAN"
    text = await command_result(workdir, f"printf '[core]\\n\\tfsmonitor = {fsmonitor(canary)}"
                                "\\n' >> team.gitconfig; echo end")
    assert "Read-only file system" in text, text
    assert "fsmonitor" not in shared.read_text()


async def test_an_update_command_a_command_writes_into_gitmodules_is_not_run(
        tmp_path: Path) -> None:
    # the command may write `.gitmodules` (it is the project's file); git refuses `!command`
    # from it ("invalid value for 'submodule.lib.update'") since 2.20
    upstream, workdir = tmp_path / "upstream", tmp_path / "work"
    for repository in (upstream, workdir):
        repository.mkdir()
        assert host_git(repository, "init", "-q").returncode == 0
        assert host_git(repository, *COMMIT, "commit", "-q", "--allow-empty",
                        "-m", "1").returncode == 0
    assert host_git(workdir, *COMMIT, "submodule", "add", "-q", "../upstream",
                    "lib").returncode == 0
    assert host_git(workdir, *COMMIT, "commit", "-qm", "lib").returncode == 0
    assert host_git(workdir, "submodule", "deinit", "-q", "-f", "lib").returncode == 0
    canary = tmp_path / "UPDATE-RAN"
    text = await command_result(workdir, "printf '[submodule \"lib\"]\\n\\tpath = lib\\n\\turl = "
                                f"../upstream\\n\\tupdate = !touch {canary}\\n' > .gitmodules "
                                "&& echo written")
    assert "written" in text, text
    for step in (("submodule", "init"), ("submodule", "update")):
        host_git(workdir, *COMMIT, *step)
    assert not canary.exists()


async def test_a_missing_config_file_the_repository_includes_is_moved_aside_once_made(
        tmp_path: Path) -> None:
    # `include.path = ../.gitconfig.local`, an optional file of the user's own settings that
    # does not exist: it cannot be bound (a placeholder directory there makes git stop reading
    # its config), so a command could write a `core.fsmonitor` there for the user's next git
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert host_git(workdir, "init", "-q").returncode == 0
    assert host_git(workdir, "config", "include.path", "../.gitconfig.local").returncode == 0
    canary = tmp_path / "GIT-RAN"
    text = await command_result(workdir, f"printf '[core]\\n\\tfsmonitor = {fsmonitor(canary)}"
                                "\\n' > .gitconfig.local && echo x > .gitconfig.other && "
                                "echo end")
    assert "end" in text, text
    host_git(workdir, "status")
    assert not canary.exists()
    assert (workdir / ".gitconfig.local.made-by-command").is_file(), text
    assert "loopwright moved .gitconfig.local" in text, text
    # must not fire: a file no configuration includes
    assert (workdir / ".gitconfig.other").read_text() == "x\n"


async def test_a_gitattributes_a_command_writes_names_no_command_git_runs(
        tmp_path: Path) -> None:
    # `.gitattributes` is the project's file: it names a filter, diff or merge driver, whose
    # command only the configuration gives (read-only: `.git/config`, `.git/info/attributes`)
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert host_git(workdir, "init", "-q").returncode == 0
    (workdir / "a.txt").write_text("one\n")
    assert host_git(workdir, *COMMIT, "add", "a.txt").returncode == 0
    assert host_git(workdir, *COMMIT, "commit", "-qm", "1").returncode == 0
    canary = tmp_path / "DRIVER-RAN"
    text = await command_result(
        workdir, "printf '* filter=x diff=x merge=x\\n' > .gitattributes && echo two > a.txt"
        f" && echo attributes; git config filter.x.clean 'touch {canary}'; git config "
        f"diff.x.textconv 'touch {canary}'; echo '* filter=x' > .git/info/attributes; echo end")
    assert "attributes" in text and text.count("could not lock config file") == 2, text
    for step in (("add", "-A"), ("diff", "--cached"), ("status",), ("stash",), ("stash", "pop")):
        host_git(workdir, *COMMIT, *step)
    assert not canary.exists()


async def test_a_link_made_on_the_way_to_a_missing_included_config_is_moved_not_followed(
        tmp_path: Path) -> None:
    # the command links the missing folder to one outside the workspace that holds a file of
    # that name: the link goes aside, the file it led to stays where it is
    workdir, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    for folder in (workdir, elsewhere):
        folder.mkdir()
    (elsewhere / "local.gitconfig").write_text("[user]\n\tname = me\n")
    assert host_git(workdir, "init", "-q").returncode == 0
    assert host_git(workdir, "config", "include.path", "../conf/local.gitconfig").returncode == 0
    text = await command_result(workdir, f"ln -s {elsewhere} conf && echo linked")
    assert "linked" in text, text
    assert sorted(os.listdir(elsewhere)) == ["local.gitconfig"], text
    assert (workdir / "conf.made-by-command").is_symlink() and not (workdir / "conf").exists()
