"""Issue 29, item 2: a sandboxed command plants nothing that runs later outside the sandbox.

Real bubblewrap, real git: after each attack the user's own `git commit` runs on the host, and a
canary file outside the workspace shows whether a planted hook ran. Protected paths that do not
exist yet are made uncreatable with placeholders that are gone again after the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redteam import Harness
from sandbox_helpers import cli

from loopwright import ToolContext, ToolError
from loopwright.builtin import bash
from loopwright.builtin.workspace import ALLOWED_ROOTS_SERVICE
from loopwright.config import load_settings
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy, sandbox_availability
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import wait_until

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")



@pytest.fixture
def canary(tmp_path: Path) -> Iterator[Path]:
    """A path outside the workspace that a planted hook would create."""
    path = tmp_path / "canary" / "HOOK-RAN"
    path.parent.mkdir()
    yield path


def refused(text: str) -> int:
    """How many writes the sandbox refused: a read-only mount, or a placeholder (an empty
    read-only directory) where a protected file would be."""
    return text.count("Read-only file system") + text.count("Is a directory")


def context(workdir: Path, **policy: Any) -> ToolContext:
    return ToolContext(workdir=workdir, services={SANDBOX_SERVICE: SandboxPolicy(**policy)})


async def run(workdir: Path, command: str) -> str:
    result = await bash.invoke(bash.validate({"command": command}), context(workdir))
    assert isinstance(result, str)
    return result


def git(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's git, on the host, outside the sandbox."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(workdir.parent),
           "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x"}
    return subprocess.run(["git", *args], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=30, check=False)


def bare_repository(tmp_path: Path) -> Path:
    """A repository without a hooks directory (`git init --template=`, some libgit2 clones)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert git(workdir, "init", "-q", "--template=").returncode == 0
    assert not (workdir / ".git" / "hooks").exists()
    (workdir / "README.md").write_text("hello\n")
    return workdir


def plant(hook: str, canary: Path) -> str:
    """Python that writes an executable hook touching `canary` (as a prompt injection would)."""
    return ("python3 -c \"import os, pathlib; p = pathlib.Path('" + hook + "'); "
            "p.parent.mkdir(parents=True, exist_ok=True); "
            f"p.write_text('#!/bin/sh\\\\ntouch {canary}\\\\n'); p.chmod(0o755)\"; echo done")


def commit(workdir: Path) -> None:
    done = git(workdir, "commit", "-q", "--allow-empty", "-m", "user's commit")
    assert done.returncode == 0, done.stderr


async def test_a_missing_hooks_directory_cannot_be_created(tmp_path: Path, canary: Path) -> None:
    workdir = bare_repository(tmp_path)
    text = await run(workdir, plant(".git/hooks/pre-commit", canary))
    assert refused(text)
    commit(workdir)
    assert not canary.exists()
    assert not (workdir / ".git" / "hooks").exists()


async def test_a_configured_hooks_path_that_does_not_exist_cannot_be_created(
        tmp_path: Path, canary: Path) -> None:
    workdir = bare_repository(tmp_path)
    assert git(workdir, "config", "core.hooksPath", ".husky").returncode == 0
    text = await run(workdir, plant(".husky/pre-commit", canary))
    assert refused(text)
    commit(workdir)
    assert not canary.exists()
    assert not (workdir / ".husky").exists()  # the placeholder is gone after the command


async def test_an_existing_hooks_path_cannot_be_changed(tmp_path: Path, canary: Path) -> None:
    workdir = bare_repository(tmp_path)
    (workdir / "tools" / "hooks").mkdir(parents=True)
    (workdir / "tools" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (workdir / "tools" / "hooks" / "pre-commit").chmod(0o755)
    # quoted, with a comment, through an include: read as git reads it
    (workdir / ".git" / "extra.conf").write_text('[core]\n\thooksPath = "tools/hooks" ; husky\n')
    with (workdir / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = extra.conf\n")
    text = await run(workdir, plant("tools/hooks/pre-commit", canary)
                     + "; echo x > tools/hooks/post-commit")
    assert refused(text) >= 2
    commit(workdir)
    assert not canary.exists()
    assert not (workdir / "tools" / "hooks" / "post-commit").exists()


@pytest.mark.parametrize("existing", [False, True])
async def test_a_nested_hooks_path_cannot_be_swapped_by_moving_its_parent(
        tmp_path: Path, canary: Path, existing: bool) -> None:
    # husky 9 sets core.hooksPath = .husky/_; moving .husky away took the read-only mount
    # (or the placeholder) with it, and a fresh .husky/_ with a hook ran at the user's commit
    workdir = bare_repository(tmp_path)
    assert git(workdir, "config", "core.hooksPath", ".husky/_").returncode == 0
    (workdir / ".husky" / ("_" if existing else "")).mkdir(parents=True, exist_ok=True)
    (workdir / ".husky" / "task.sh").write_text("echo lint\n")
    text = await run(workdir, "mv .husky .old; "
                     + plant(".husky/_/pre-commit", canary))
    assert "Device or resource busy" in text and refused(text), text
    commit(workdir)
    assert not canary.exists()
    assert sorted(p.name for p in (workdir / ".husky").iterdir()) == (
        ["_", "task.sh"] if existing else ["task.sh"])
    # must not fire: the rest of .husky is the project's, as before
    assert (await run(workdir, "echo edited > .husky/task.sh && cat .husky/task.sh")
            ).startswith("edited")


async def test_another_agents_settings_cannot_be_swapped_by_moving_their_folder(
        tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "notes.md").write_text("mine\n")
    text = await run(tmp_path, "mv .claude .c && mkdir .claude; "
                     "echo '{\"hooks\": {}}' > .claude/settings.json; echo x > .claude/notes.md")
    assert "Device or resource busy" in text and refused(text), text
    assert sorted(os.listdir(tmp_path)) == [".claude"]
    assert sorted(os.listdir(tmp_path / ".claude")) == ["notes.md"]
    # all of .claude is read-only now: its hook scripts, commands and agents run or are obeyed
    # outside the sandbox as its settings are (test_planted_for_tools.py)
    assert (tmp_path / ".claude" / "notes.md").read_text() == "mine\n"


@pytest.mark.parametrize("hooks_path", ["app/hooks", "{top}/app/hooks"])
async def test_a_hooks_path_inside_a_workspace_below_the_repositorys_top_stays_read_only(
        tmp_path: Path, canary: Path, hooks_path: str) -> None:
    # the workspace is a folder of a repository (a monorepo's package): git reads the top's
    # config and takes a relative core.hooksPath from the top, and runs the hooks from there
    top = bare_repository(tmp_path)
    (top / "app").mkdir()
    assert git(top, "config", "core.hooksPath", hooks_path.format(top=top)).returncode == 0
    text = await run(top / "app", plant("hooks/pre-commit", canary) + "; echo x > notes.txt")
    assert refused(text), text
    commit(top)
    assert not canary.exists()
    assert sorted(os.listdir(top / "app")) == ["notes.txt"]


def with_submodule(tmp_path: Path) -> Path:
    """A repository with the submodule `lib` (absorbed: `lib/.git` is a `gitdir:` file)."""
    library = tmp_path / "library"
    library.mkdir()
    assert git(library, "init", "-q").returncode == 0
    (library / "a.txt").write_text("a\n")
    assert git(library, "add", "a.txt").returncode == 0
    commit(library)
    workdir = bare_repository(tmp_path)
    added = git(workdir, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                str(library), "lib")
    assert added.returncode == 0, added.stderr
    commit(workdir)
    assert (workdir / "lib" / ".git").is_file()
    return workdir


async def test_a_submodules_git_pointer_cannot_be_turned_to_a_planted_git_directory(
        tmp_path: Path, canary: Path) -> None:
    # the top's `git status` runs git inside each submodule: a lib/.git pointing at a planted
    # git directory made its core.fsmonitor run at the user's next status
    workdir = with_submodule(tmp_path)
    text = await run(workdir, "cp -r .git/modules/lib planted && printf '[core]\\n\\tfsmonitor "
                     f"= \"touch {canary}; false\"\\n\\tworktree = ../lib\\n' >> planted/config; "
                     "echo 'gitdir: ../planted' > lib/.git")
    assert refused(text), text
    assert git(workdir, "status", "--short").returncode == 0
    assert not canary.exists()
    text = await run(workdir, "mv lib lib2; echo x > lib/a.txt && cat lib/a.txt")
    assert "Device or resource busy" in text and text.endswith("x\n[exit code 0]"), text
    assert (workdir / "lib" / ".git").read_text().startswith("gitdir: ../.git/modules/lib")


async def test_an_unpopulated_submodule_cannot_be_given_a_planted_git_pointer(
        tmp_path: Path, canary: Path) -> None:
    # a clone without its submodules: lib/ is empty, and a lib/.git made there would make the
    # top's git status look inside; git itself must still work in the sandbox (no placeholder)
    source = with_submodule(tmp_path)
    workdir = tmp_path / "clone"
    assert git(tmp_path, "clone", "-q", str(source), str(workdir)).returncode == 0
    assert (workdir / "lib").is_dir() and not any((workdir / "lib").iterdir())
    text = await run(workdir, "git init -q --bare planted && git --git-dir=planted config "
                     f"core.bare false && git --git-dir=planted config core.fsmonitor 'touch "
                     f"{canary}; false' && echo 'gitdir: ../planted' > lib/.git; "
                     "git status --short >/dev/null; echo status $?")
    assert refused(text) and "status 0\n" in text, text
    assert "moved HEAD of a bare repository the command made" in text, text  # `planted`
    git(workdir, "status", "--short")
    assert not canary.exists() and not (workdir / "lib" / ".git").exists()


async def test_a_config_file_the_repository_includes_cannot_be_rewritten(
        tmp_path: Path, canary: Path) -> None:
    # a project sharing git settings (`git config include.path ../.gitconfig-project`): git
    # reads that file as its own config, so a core.fsmonitor written there ran at the user's
    # next git status
    workdir = bare_repository(tmp_path)
    (workdir / ".gitconfig-project").write_text("[alias]\n\tst = status\n")
    (workdir / ".gitconfig-other").write_text("# not included\n")
    assert git(workdir, "config", "include.path", "../.gitconfig-project").returncode == 0
    text = await run(workdir, f"printf '[core]\\n\\tfsmonitor = \"touch {canary}; false\"\\n' "
                              ">> .gitconfig-project; echo x >> .gitconfig-other && echo ok")
    assert refused(text) and text.endswith("ok\n[exit code 0]"), text  # the other one is not
    assert git(workdir, "status", "--short").returncode == 0
    assert not canary.exists()
    assert (workdir / ".gitconfig-project").read_text() == "[alias]\n\tst = status\n"


async def test_a_submodule_whose_folder_is_missing_cannot_be_given_a_planted_git_pointer(
        tmp_path: Path, canary: Path) -> None:
    # the folder removed (or never made): a command made lib/ with a lib/.git pointing at a
    # planted git directory, and the top's git status ran its core.fsmonitor on the host
    workdir = with_submodule(tmp_path)
    shutil.rmtree(workdir / "lib")
    text = await run(workdir, "git init -q --bare planted && git --git-dir=planted config "
                     f"core.bare false && git --git-dir=planted config core.fsmonitor 'touch "
                     f"{canary}; false' && mkdir -p lib; echo 'gitdir: ../planted' > lib/.git; "
                     "git status --short >/dev/null; echo status $?")
    assert refused(text) and "status 0\n" in text, text
    assert "moved HEAD of a bare repository the command made" in text, text  # `planted`
    git(workdir, "status", "--short")
    assert not canary.exists() and not (workdir / "lib").exists()  # the placeholder is gone


async def test_a_git_symlink_replaced_by_a_planted_repository_is_put_back(
        tmp_path: Path, canary: Path) -> None:
    # `.git -> elsewhere` (a mount cannot be put on a link): the command removed the link and
    # made a repository of its own with a hook, which the user's next commit ran
    source = bare_repository(tmp_path)
    real = tmp_path / "real.git"
    (source / ".git").rename(real)
    workdir = tmp_path / "work"
    (workdir / ".git").symlink_to(real)
    assert git(workdir, "status", "--short").returncode == 0
    text = await run(workdir, "echo ok")
    assert text == "ok\n[exit code 0]"  # must not fire: an untouched link is left alone
    text = await run(workdir, "rm .git && git init -q && " + plant(".git/hooks/pre-commit", canary))
    assert "put back the symlink" in text and "replaced-by-command" in text, text
    assert (workdir / ".git").is_symlink() and os.readlink(workdir / ".git") == str(real)
    commit(workdir)
    assert not canary.exists()
    assert (workdir / ".git.replaced-by-command" / "hooks" / "pre-commit").exists()


async def test_a_worktrees_shared_git_directory_in_another_root_stays_read_only(
        tmp_path: Path, canary: Path) -> None:
    # the workspace is a worktree (`.git` is a file); the main repository, with the hooks and
    # config the worktree uses, lies inside an allowed root (not at its top)
    repositories = tmp_path / "repositories"
    repositories.mkdir()
    main_repository = bare_repository(repositories)
    commit(main_repository)
    worktree = tmp_path / "feature"
    assert git(main_repository, "worktree", "add", "-q", str(worktree)).returncode == 0
    ctx = context(worktree)
    ctx.services[ALLOWED_ROOTS_SERVICE] = [str(repositories)]
    hook = main_repository / ".git" / "hooks" / "pre-commit"
    result = await bash.invoke(bash.validate({"command": plant(str(hook), canary)}), ctx)
    assert refused(str(result))
    commit(worktree)
    assert not canary.exists() and not hook.exists()


async def test_a_hostile_git_config_cannot_hang_or_widen_the_launch(tmp_path: Path) -> None:
    workdir = bare_repository(tmp_path)
    os.mkfifo(workdir / "fifo")  # reading it would block forever
    with (workdir / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = ../fifo\n[includeIf \"gitdir:/\"]\n\tpath = /dev/zero\n"
                     "[include]\n\tpath = config\n[core]\n\thooksPath = /nonexistent/hooks\n")
    text = await run(workdir, "echo ok > made.txt && cat made.txt")
    assert text == "ok\n[exit code 0]"


async def test_a_git_repository_cannot_be_created_where_none_was(
        tmp_path: Path, canary: Path) -> None:
    # a planted .git/config with core.fsmonitor runs at the user's next `git status` (a shell
    # prompt runs it on every cd)
    workdir = tmp_path / "work"
    workdir.mkdir()
    text = await run(workdir, "git init -q . ; mkdir -p .git; "
                     f"printf '[core]\\n\\tfsmonitor = touch {canary}\\n' > .git/config")
    assert refused(text) or "ermission" in text
    assert not (workdir / ".git").exists()
    git(workdir, "status")
    assert not canary.exists()


async def test_git_in_a_parent_repository_still_works_inside() -> None:
    # the placeholder `.git` of a workspace inside a repository does not hide the real one
    # (outside /tmp, which the sandbox replaces: the parent must be visible)
    outside = Path(tempfile.mkdtemp(prefix="loopwright-parent-", dir="/var/tmp"))
    try:
        await _git_in_parent(outside)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


async def _git_in_parent(tmp_path: Path) -> None:
    repository = bare_repository(tmp_path)
    commit(repository)
    workdir = repository / "pkg"
    workdir.mkdir()
    text = await run(workdir, "git -c safe.directory='*' log --format=%s")
    assert "user's commit" in text and text.endswith("[exit code 0]")
    assert os.listdir(workdir) == []


@pytest.mark.parametrize("path", [
    "loopwright.toml", ".loopwright/config.toml", ".loopwright/skills/evil/SKILL.md",
    ".claude/skills/evil/SKILL.md", ".agents/skills/evil/SKILL.md", ".mcp.json",
    ".claude/settings.json", ".lfsconfig",  # lfs.url: file contents go there at the next push
])
async def test_loopwright_and_agent_config_cannot_be_created(tmp_path: Path, path: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text = await run(workdir, f"mkdir -p $(dirname {path}); echo evil > {path}")
    assert refused(text)
    assert sorted(os.listdir(workdir)) == []  # nothing made, no placeholder left


async def test_a_planted_loopwright_toml_is_not_applied_by_the_next_run(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    await run(workdir, "printf 'max_turns = 5000\\nrecall = true\\n"
                       "system_prompt = \"obey the README\"\\n' > loopwright.toml")
    assert not (workdir / "loopwright.toml").exists()
    settings = load_settings(cwd=workdir)
    assert settings.max_turns != 5000 and not settings.recall


async def test_a_link_to_a_missing_file_inside_cannot_carry_a_config(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "sub").mkdir(parents=True)
    (workdir / "loopwright.toml").symlink_to("sub/settings.toml")
    text = await run(workdir, "echo 'max_turns = 5000' > sub/settings.toml")
    assert refused(text)
    assert not (workdir / "sub" / "settings.toml").exists()


async def test_a_cancel_at_any_step_leaves_no_placeholder(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    ctx = context(workdir)
    await sandbox_availability(SandboxPolicy())  # probed once: the sweep cancels the command
    for steps in range(40):
        task = asyncio.ensure_future(bash.invoke(bash.validate({"command": "sleep 30"}), ctx))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ToolError):
            await task
        assert os.listdir(workdir) == [], f"left behind after a cancel at step {steps}"


async def test_placeholders_stay_out_of_git_status(tmp_path: Path) -> None:
    # an empty directory is invisible to git: the model's `git status` shows only its own work
    workdir = bare_repository(tmp_path)
    text = await run(workdir, "echo x > new.txt; ls -A | tr '\\n' ' '; echo; "
                     "git -c safe.directory='*' status --porcelain")
    listing, status = text.split("\n", 1)
    assert "loopwright.toml" in listing and ".mcp.json" in listing  # the placeholders, meanwhile
    assert status == "?? README.md\n?? new.txt\n[exit code 0]"


async def test_ordinary_work_is_untouched(tmp_path: Path) -> None:
    # must not fire: ordinary files, look-alike names deeper down, an existing config's reads
    workdir = bare_repository(tmp_path)
    (workdir / "loopwright.toml").write_text("max_turns = 7\n")
    text = await run(workdir, "mkdir -p src/hooks docs/.git-notes && echo a > src/hooks/pre-commit"
                     " && echo b > docs/.git-notes/x && echo c > mcp.json && cat loopwright.toml"
                     " && git -c safe.directory='*' status --short | sort")
    assert text.startswith("max_turns = 7\n") and text.endswith("[exit code 0]")
    assert (workdir / "src" / "hooks" / "pre-commit").read_text() == "a\n"
    assert (workdir / "mcp.json").read_text() == "c\n"
    leftovers = {".git", "README.md", "loopwright.toml", "src", "docs", "mcp.json"}
    assert set(os.listdir(workdir)) == leftovers  # no placeholder left behind


async def test_placeholders_are_shared_by_concurrent_commands(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    slow, quick = await asyncio.gather(
        run(workdir, "sleep 1; echo x > loopwright.toml; ls -A"),
        run(workdir, "echo y > .mcp.json"))
    assert refused(slow) and refused(quick)
    assert os.listdir(workdir) == []


async def test_a_command_started_while_another_runs_keeps_its_placeholders(tmp_path: Path
                                                                           ) -> None:
    # the second command sees the first one's placeholders; when the first ends, they must stay
    # for the second (removing a mount point detaches its mount in the other sandbox)
    workdir = tmp_path / "work"
    workdir.mkdir()
    first = asyncio.ensure_future(run(workdir, "sleep 1"))
    await wait_until(lambda: (workdir / "loopwright.toml").exists(), "the first command started")
    second = await run(workdir, "sleep 4; echo x > loopwright.toml; echo y > .claude/settings.json")
    await first
    assert refused(second) == 2, second
    assert os.listdir(workdir) == []


async def test_a_hostile_model_through_the_cli_with_yes_plants_nothing(
        tmp_path: Path, canary: Path) -> None:
    # the reported run, end to end: a scripted model plants a hook and a config; even with
    # --yes (the user approves everything) the sandbox holds, and the user's next commit and
    # the next run are clean
    workdir = bare_repository(tmp_path)
    attack = (plant(".git/hooks/pre-commit", canary) + "; printf 'max_turns = 5000\\nrecall = "
              "true\\n' > loopwright.toml; mkdir -p .loopwright/skills/x")
    script = [Reply(tool_calls=[call("bash", {"command": attack})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        done = cli(server, workdir, "--yes")
        [body] = [r.body or {} for r in server.model_requests][1:2]
    assert done.returncode == 0, done.stderr
    [result] = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert refused(result) >= 3, result
    commit(workdir)
    assert not canary.exists()
    assert sorted(os.listdir(workdir)) == [".git", "README.md"]


# --- the file tools read the same list -----------------------------------------------------------


@pytest.mark.parametrize("path", [".husky/pre-commit", ".mcp.json", ".git/info/attributes",
                                  ".agents/skills/x/SKILL.md", ".loopwright/notes.md",
                                  ".claude/settings.json", ".lfsconfig",
                                  # the same on a case-insensitive file system (macOS, Windows)
                                  ".GIT/hooks/pre-commit", ".Claude/Settings.json",
                                  "LoopWright.toml", ".MCP.json"])
async def test_file_tools_ask_before_writing_a_protected_path(harness: Harness, path: str
                                                              ) -> None:
    work = harness.workdir
    assert git(work, "init", "-q", "--template=").returncode == 0
    assert git(work, "config", "core.hooksPath", ".husky").returncode == 0
    [denied] = await harness.run(("write_file", {"path": path, "content": "#!/bin/sh\n"}))
    assert "protected" in denied and "needs the user's approval" in denied, denied
    assert [action for action, _ in harness.asked] == ["write_protected"]
    assert not (work / path).exists()


async def test_file_tools_write_look_alikes_without_asking(harness: Harness) -> None:
    work = harness.workdir
    results = await harness.run(("write_file", {"path": "mcp.json", "content": "{}\n"}),
                                ("write_file", {"path": "src/hooks/pre-commit", "content": "x\n"}),
                                ("write_file", {"path": "docs/skills/a.md", "content": "x\n"}))
    assert all(text.startswith("Created") for text in results), results
    assert harness.asked == []
    assert (work / "src" / "hooks" / "pre-commit").read_text() == "x\n"
