"""What a sandboxed command plants below the top of the workspace for programs run later,
outside the sandbox: a compiled module (`__pycache__/app.cpython-311.pyc` beside an unchanged
`app.py`: Python checks only the source's mtime and size recorded in it), a repository one
folder down (`vendor/x/.git`, whose `core.fsmonitor` VS Code's git extension runs when the
project opens) and another agent's or an editor's folder in a package (`pkg/.claude`,
`pkg/.vscode`). After each command, loopwright removes the `.pyc` files it wrote and moves the
protected names it made below the top aside; the ones that existed before are read-only to
commands, as at the top. Where the rule must not fire: a `.pyc` the command did not touch, a
repository the user had, look-alike names, and vendored dependencies.

Real bubblewrap, real Python and git outside the sandbox, through `Agent` against the fake
model server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import (
    FAST,
    PYTHON,
    app,
    command_result,
    fsmonitor,
    host_git,
    host_python,
    plant_pyc,
    tool_results,
)

import loopwright
from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

@pytest.mark.parametrize("compiled_before", [True, False])
async def test_a_pyc_planted_beside_an_unchanged_source_does_not_run_at_the_next_import(
        tmp_path: Path, compiled_before: bool) -> None:
    workdir = app(tmp_path / "work")
    canary = tmp_path / "PYC-RAN"
    if compiled_before:  # the user ran the app: Python wrote its cache
        assert host_python(workdir, "import app").returncode == 0
        assert list((workdir / "__pycache__").glob("app.*.pyc"))
    text = await command_result(workdir, plant_pyc(canary))
    imported = host_python(workdir, "import app")
    assert not canary.exists()
    assert imported.stdout == "the real app\n", imported
    assert "planted" in text and "removed 1 compiled Python file" in text, text


async def test_a_pyc_the_command_did_not_write_stays_and_a_changed_source_runs(
        tmp_path: Path) -> None:
    # must not fire on what the command left alone; Python in the sandbox writes its caches
    # to the sandbox's own /tmp, so none is written (or removed) beside the changed source,
    # and the next import outside compiles the new one
    workdir = app(tmp_path / "work")
    (workdir / "lib.py").write_text("VALUE = 1\n")
    assert host_python(workdir, "import app, lib").returncode == 0
    [lib_cache] = list((workdir / "__pycache__").glob("lib.*.pyc"))
    before = lib_cache.stat()
    text = await command_result(workdir, "echo \"print('changed')\" > app.py && "
                                f"env -u PYTHONDONTWRITEBYTECODE {PYTHON} -c 'import app'")
    assert text == "changed\n[exit code 0]", text
    assert lib_cache.stat().st_ino == before.st_ino
    assert lib_cache.stat().st_mtime_ns == before.st_mtime_ns
    assert host_python(workdir, "import app").stdout == "changed\n"


async def test_a_pycache_link_to_a_folder_not_checked_is_removed(tmp_path: Path) -> None:
    # `__pycache__ -> node_modules/c`: Python follows the link, and the .pyc lies in a
    # dependency folder, where the check once did not look for .pyc files
    workdir = app(tmp_path / "work")
    canary = tmp_path / "PYC-RAN"
    text = await command_result(workdir, "mkdir -p node_modules/c && ln -s node_modules/c "
                                f"__pycache__ && {plant_pyc(canary)}")
    host_python(workdir, "import app")
    assert not canary.exists()
    # the link, and since .pyc files in dependency folders are looked at too, the file
    assert "removed 2 compiled Python file(s) the command wrote" in text, text
    assert "__pycache__" in text and "node_modules/c/app." in text, text


async def test_a_sourceless_pyc_shadowing_a_standard_module_is_removed(tmp_path: Path) -> None:
    # Python imports `csv.pyc` from the script's folder when no `csv.py` is there, before the
    # standard library's csv, and git ignores it as it ignores every .pyc
    workdir = app(tmp_path / "work")
    (workdir / "report.py").write_text("import csv\nprint('report')\n")
    canary = tmp_path / "PYC-RAN"
    text = await command_result(workdir, f"""{PYTHON} - <<'EOF'
import pathlib, py_compile
pathlib.Path("x.py").write_text("import pathlib; pathlib.Path({str(canary)!r}).touch()")
py_compile.compile("x.py", cfile="csv.pyc")
pathlib.Path("x.py").unlink()
EOF""")
    ran = subprocess.run([PYTHON, "report.py"], cwd=workdir, capture_output=True, text=True,
                         timeout=30, check=False)
    assert not canary.exists() and ran.stdout == "report\n", ran
    assert "removed 1 compiled Python file(s) the command wrote (csv.pyc)" in text, text


async def test_a_command_cannot_make_the_check_give_up_by_making_many_folders(
        tmp_path: Path) -> None:
    # 60,000 folders in one command (more than a bounded walk took), then the plant: a walk
    # after a command reads only what changed, so it never gives up
    workdir = app(tmp_path / "work")
    canary = tmp_path / "PYC-RAN"
    make = f"{PYTHON} -c \"import os; [os.makedirs(f'm/{{i % 300}}/{{i}}') for i in range(60000)]\""
    script = [Reply(tool_calls=[call("bash", {"command": make})]),
              Reply(tool_calls=[call("bash", {"command": plant_pyc(canary)})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approve_all=True)
        result = await agent.run("go")
    host_python(workdir, "import app")
    assert not canary.exists()
    [_, planted] = tool_results(result.messages)
    assert "removed 1 compiled Python file" in planted, planted


async def test_a_repository_a_command_makes_one_folder_down_is_moved_aside(
        tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(
        workdir, f"git init -q vendor/x && git -C vendor/x config core.fsmonitor "
        f"'{fsmonitor(canary)}' && git init -q --bare planted && git --git-dir=planted config "
        f"core.bare false && git --git-dir=planted config core.fsmonitor '{fsmonitor(canary)}'"
        " && mkdir -p vendor/y && echo 'gitdir: ../../planted' > vendor/y/.git"
        # a virtual environment's own top: VS Code finds a repository one folder down there too
        " && git init -q .venv && git -C .venv config core.fsmonitor "
        f"'{fsmonitor(canary)}' && echo made")
    for folder in ("vendor/x", "vendor/y", ".venv"):
        host_git(workdir / folder, "status")  # what VS Code runs in each repository it finds
    assert not canary.exists()
    for folder in ("vendor/x", "vendor/y", ".venv"):
        assert not (workdir / folder / ".git").exists()
        assert (workdir / folder / ".git.made-by-command").exists()
    assert "made" in text and text.count("moved a repository") == 3, text


async def test_a_repository_the_user_had_stays_and_is_read_only(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    vendored = workdir / "vendor" / "old"
    vendored.mkdir(parents=True)
    assert host_git(vendored, "init", "-q").returncode == 0
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(
        workdir, "git -C vendor/old status --short; echo status $?; git -C vendor/old config "
        f"core.fsmonitor '{fsmonitor(canary)}'; echo x > vendor/old/file.txt; echo end")
    host_git(vendored, "status")
    assert not canary.exists()
    assert "status 0" in text and "moved" not in text, text
    assert "could not lock config file" in text or "Read-only file system" in text, text
    assert (vendored / ".git").is_dir() and (vendored / "file.txt").is_file()


async def test_the_git_directory_a_users_nested_git_file_points_to_is_read_only(
        tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "vendor").mkdir(parents=True)
    (workdir / ".gitdirs").mkdir()
    made = host_git(workdir, "init", "-q", "--separate-git-dir=.gitdirs/x", "vendor/x")
    assert made.returncode == 0, made.stderr
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(workdir, "git -C vendor/x config core.fsmonitor "
                                f"'{fsmonitor(canary)}'; echo end")
    host_git(workdir / "vendor" / "x", "status")
    assert not canary.exists()
    assert "could not lock config file" in text or "Read-only file system" in text, text


TASKS = '{"version": "2.0.0", "tasks": [{"label": "x", "command": "touch /tmp/x", ' \
        '"runOptions": {"runOn": "folderOpen"}}]}'


async def test_an_editors_or_agents_folder_made_in_a_package_is_moved_aside(
        tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text = await command_result(
        workdir, f"mkdir -p pkg/.vscode pkg/.claude && echo '{TASKS}' > pkg/.vscode/tasks.json"
        " && echo '{\"hooks\": {}}' > pkg/.claude/settings.json && echo '{}' > pkg/.mcp.json"
        " && echo '{}' > pkg/.devcontainer.json"
        # look-alikes, and a dependency's own folders: not moved
        " && mkdir -p pkg/vscode node_modules/dep/.vscode && echo '{}' > pkg/vscode/tasks.json"
        " && echo '{}' > pkg/devcontainer.json"
        " && echo '{}' > node_modules/dep/.vscode/tasks.json && echo made")
    assert "made" in text and text.count("loopwright moved") == 4, text
    package = workdir / "pkg"
    assert sorted(os.listdir(package)) == [".claude.made-by-command",
                                           ".devcontainer.json.made-by-command",
                                           ".mcp.json.made-by-command",
                                           ".vscode.made-by-command", "devcontainer.json",
                                           "vscode"]
    assert (workdir / "node_modules" / "dep" / ".vscode" / "tasks.json").is_file()


async def test_more_agents_and_editors_files_made_in_a_package_are_moved_aside(
        tmp_path: Path) -> None:
    # Codex, OpenCode, Zed and Aider started in `pkg/` would run what these name
    workdir = tmp_path / "work"
    workdir.mkdir()
    names = [".codex", "opencode.json", ".zed", ".aider.conf.yml"]
    text = await command_result(workdir, "mkdir -p pkg/.codex pkg/.zed && echo x > "
                                "pkg/.codex/config.toml && echo '{}' > pkg/opencode.json && "
                                "echo '{}' > pkg/.zed/settings.json && echo 'lint-cmd: x' > "
                                "pkg/.aider.conf.yml && echo x > pkg/opencode.md && echo made")
    assert "made" in text and text.count("loopwright moved") == len(names), text
    assert sorted(os.listdir(workdir / "pkg")) == sorted(
        [*(f"{name}.made-by-command" for name in names), "opencode.md"])


async def test_an_editors_folder_that_exists_in_a_package_is_read_only(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    settings = workdir / "pkg" / ".vscode"
    settings.mkdir(parents=True)
    (settings / "tasks.json").write_text("{}\n")
    text = await command_result(workdir, f"echo '{TASKS}' > pkg/.vscode/tasks.json; "
                                "echo x > pkg/.vscode/new.json; mv pkg pkg2; echo end")
    assert text.count("Read-only file system") == 2 and "moved" not in text, text
    assert (settings / "tasks.json").read_text() == "{}\n"
    assert os.listdir(settings) == ["tasks.json"]


# --- a user who is not root: a command may take away the write access its plant needs -------

NOBODY = 65534
SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
AS_NOBODY = """
import asyncio, sys
from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.testing import FakeModelServer, Reply, call

async def main() -> None:
    script = [Reply(tool_calls=[call("bash", {"command": sys.argv[1]})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=default_tools(),
                      workdir=sys.argv[2], approve_all=True)
        result = await agent.run("go")
    print([str(m.content) for m in result.messages if m.role == "tool"])

asyncio.run(main())
"""


@pytest.fixture
def nobodys_folder() -> Iterator[Path]:
    """A folder of the user nobody's (not under pytest's root-only tmp_path)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not os.access(SYSTEM_PYTHON,
                                                                             os.X_OK):
        pytest.skip("needs root, setpriv and a system Python of this version to act as nobody")
    folder = Path(tempfile.mkdtemp(prefix="loopwright-nobody-"))
    (folder / "home").mkdir()
    app(folder / "work")
    (folder / "agent.py").write_text(AS_NOBODY)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize("mode", ["555", "111"])
async def test_a_plant_in_a_folder_the_command_made_read_only_is_still_undone(
        nobodys_folder: Path, mode: str) -> None:
    # as root the removal ignored the modes; as any other user, under `chmod 555` it failed and
    # the .pyc was left (silently), the `.vscode` with a note; `chmod 111` (no listing, yet
    # Python and VS Code open the files by name) hid both from the check
    canary = nobodys_folder / "PYC-RAN"
    command = (f"{plant_pyc(canary, 'python3')}\nchmod {mode} __pycache__ && mkdir -p "
               f"pkg/.vscode && echo '{{}}' > pkg/.vscode/tasks.json && chmod {mode} pkg")
    source = Path(loopwright.__file__).resolve().parents[1]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(nobodys_folder / "home"),
           "PYTHONPATH": f"{source}{os.pathsep}{sysconfig.get_paths()['purelib']}"}
    done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                           "--clear-groups", SYSTEM_PYTHON, "agent.py", command,
                           str(nobodys_folder / "work")], cwd=nobodys_folder, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    host_python(nobodys_folder / "work", "import app")
    assert not canary.exists()
    assert not (nobodys_folder / "work" / "pkg" / ".vscode").exists(), done.stdout
    assert "removed 1 compiled" in done.stdout, done.stdout


async def test_python_in_the_sandbox_keeps_its_caches_outside_the_workspace_between_commands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the private /tmp every command compiled again each module it imported, the standard
    library's too (Python reads caches from the prefix alone): a test run under the agent paid
    it every time. They are kept in loopwright's cache now, one folder per workspace, which
    the user's own Python never reads."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "mod.py").write_text("VALUE = 7\n")
    importing = "python3 -c 'import mod, json; print(mod.VALUE)'"
    assert "7" in await command_result(workdir, importing)
    [compiled] = list(cache.rglob("mod.*.pyc"))
    assert compiled.is_relative_to(cache / "loopwright" / "pycache")
    assert list(cache.rglob("json/__init__.*.pyc"))  # the standard library's too
    assert not list(workdir.rglob("*.pyc"))
    before = compiled.stat().st_mtime_ns
    assert "7" in await command_result(workdir, importing)
    assert compiled.stat().st_mtime_ns == before  # read, not compiled again
    assert host_python(workdir, "import mod; print(mod.VALUE)").stdout.strip() == "7"
