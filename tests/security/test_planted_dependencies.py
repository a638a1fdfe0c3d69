"""What a sandboxed command plants in dependency folders for later, outside the sandbox:

- a `.pyc` in a virtual environment inside the workspace: the user's `.venv/bin/python` runs
  it at the next import (its header matching the unchanged source, or hash-based and never
  checked), and nothing shows it (the venv is ignored, the `.py` is unchanged);
- a `core.fsmonitor` (or `core.hooksPath`, or a hook) written into a repository the user
  already had in `node_modules`, which is not bound read-only (a mount point there would keep
  `rm -rf node_modules` from working): an editor runs git in the repository of a file you
  open there, and git runs what its config says.

Where the rule must not fire: a `.pyc` the user's own Python wrote, a repository the command
only read, `rm -rf node_modules` and a reinstall afterwards.

Real bubblewrap, git and `python -m venv`, through `Agent` against the fake model server."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox_helpers import PYTHON, command_result, fsmonitor, host_git, plant_pyc

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

PACKAGE = "import pathlib\nVALUE = 1\n"


def venv_python(workdir: Path, code: str) -> subprocess.CompletedProcess[str]:
    """The user's Python of the workspace's `.venv`, outside the sandbox, writing its caches."""
    return subprocess.run([str(workdir / ".venv" / "bin" / "python"), "-c", code], cwd=workdir,
                          env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=60, check=False)


def workspace_venv(workdir: Path) -> Path:
    """A real `.venv` in `workdir` with a package `pkg` (`__init__`, `other`, `fresh`) in its
    site-packages, the first two imported once by the user (their caches written)."""
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(workdir / ".venv")], check=True,
                   timeout=120)
    [site] = (workdir / ".venv" / "lib").glob("python3*/site-packages")
    package = site / "pkg"
    package.mkdir()
    for name in ("__init__", "other", "fresh"):
        (package / f"{name}.py").write_text(PACKAGE)
    assert venv_python(workdir, "import pkg, pkg.other").returncode == 0
    return package


@pytest.mark.parametrize(("module", "unchecked"), [
    ("__init__", False),  # rewritten in place, its header matching the unchanged source
    ("fresh", True),      # a new hash-based one: Python never compares it with the source
])
async def test_a_pyc_planted_in_a_workspace_venv_does_not_run_at_the_next_import(
        tmp_path: Path, module: str, unchecked: bool) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    package = workspace_venv(workdir)
    [users] = (package / "__pycache__").glob("other.*.pyc")
    kept = users.stat()
    canary = tmp_path / "PYC-RAN"
    source = str((package / f"{module}.py").relative_to(workdir))
    text = await command_result(workdir, plant_pyc(canary, PYTHON, source,
                                                   unchecked=unchecked))
    imported = venv_python(workdir, "import pkg, pkg.fresh, pkg.other; print(pkg.VALUE)")
    assert imported.stdout == "1\n", imported
    assert not canary.exists()
    assert "planted" in text and "removed 1 compiled Python file" in text, text
    # the user's own cache, not written by the command, stays as it was
    assert (users.stat().st_ino, users.stat().st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)


def dependency_repository(workdir: Path) -> Path:
    dependency = workdir / "node_modules" / "dep"
    dependency.mkdir(parents=True)
    (dependency / "index.js").write_text("module.exports = 1\n")
    assert host_git(dependency, "init", "-q").returncode == 0
    assert host_git(dependency, "add", "index.js").returncode == 0
    assert host_git(dependency, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm",
                    "1").returncode == 0
    return dependency


@pytest.mark.parametrize("plant", [
    "git -C node_modules/dep config core.fsmonitor '{run}'",
    "printf '[core]\\n\\tfsmonitor = {run}\\n' >> node_modules/dep/.git/config",
    "mkdir -p node_modules/hooks && printf '#!/bin/sh\\n{run}\\n' > node_modules/hooks/"
    "post-checkout && chmod +x node_modules/hooks/post-checkout && git -C node_modules/dep "
    "config core.hooksPath ../hooks",
    "printf '#!/bin/sh\\n{run}\\n' > node_modules/dep/.git/hooks/post-checkout && "
    "chmod +x node_modules/dep/.git/hooks/post-checkout",
])
async def test_what_a_command_writes_into_a_users_repository_in_node_modules_is_moved_aside(
        tmp_path: Path, plant: str) -> None:
    workdir = tmp_path / "work"
    dependency = dependency_repository(workdir)
    canary = tmp_path / "GIT-RAN"
    text = await command_result(workdir, plant.format(run=fsmonitor(canary)) + " && echo made")
    host_git(dependency, "status")  # the editor, once you open a file there
    host_git(dependency, "checkout", "-q", "-b", "other")
    assert not canary.exists()
    assert (dependency / ".git.made-by-command").is_dir(), text
    assert "made" in text and "changed the git configuration or hooks" in text, text


@pytest.mark.parametrize("plant", [
    # the git directory the `.git` file points to, in node_modules too (not bound either)
    "git -C node_modules/dep config core.fsmonitor '{run}'",
    # the `.git` file turned, in place (the same inode), to a git directory the command made
    "git init -q --bare node_modules/.cache/x.git && git --git-dir=node_modules/.cache/x.git "
    "config core.fsmonitor '{run}' && git --git-dir=node_modules/.cache/x.git config core.bare "
    "false && echo 'gitdir: ../.cache/x.git' > node_modules/dep/.git",
])
async def test_a_users_git_file_in_node_modules_and_where_it_points_are_checked(
        tmp_path: Path, plant: str) -> None:
    # held before this file's fixes too, by the check of bare repositories
    workdir = tmp_path / "work"
    dependency = workdir / "node_modules" / "dep"
    dependency.mkdir(parents=True)
    pointed = workdir / "node_modules" / ".repos" / "dep.git"
    pointed.parent.mkdir()
    assert host_git(workdir, "init", "-q", f"--separate-git-dir={pointed}",
                    str(dependency)).returncode == 0
    canary = tmp_path / "GIT-RAN"
    text = await command_result(workdir, plant.format(run=fsmonitor(canary)) + " && echo made")
    host_git(dependency, "status")
    assert not canary.exists()
    # a git directory is shaped like a bare repository: its HEAD is what is moved aside
    assert "made" in text and "moved HEAD of a bare repository" in text, text


async def test_a_users_repository_in_node_modules_the_command_only_used_stays_and_can_go(
        tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    dependency = dependency_repository(workdir)
    text = await command_result(workdir, "git -C node_modules/dep status --short && "
                                "git -C node_modules/dep log --oneline; echo seen")
    assert "seen" in text and "moved" not in text, text
    assert (dependency / ".git").is_dir()
    text = await command_result(
        workdir, "rm -rf node_modules && mkdir -p node_modules/dep && git init -q "
        "node_modules/dep && echo reinstalled")
    # a reinstall that clones again makes a new repository: set aside as any other one made
    assert "reinstalled" in text and "moved a repository" in text, text
    assert (workdir / "node_modules" / "dep" / ".git.made-by-command").is_dir()


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
async def test_npm_install_works_beside_a_users_repository_in_node_modules(
        tmp_path: Path) -> None:
    # offline, from a local package: npm links it and prunes the extraneous `dep` (its `.git`
    # with it), which a read-only mount there would have kept it from doing
    workdir = tmp_path / "work"
    dependency_repository(workdir)
    (workdir / "local").mkdir()
    (workdir / "local" / "package.json").write_text(json.dumps({"name": "local",
                                                                 "version": "1.0.0"}))
    (workdir / "package.json").write_text(json.dumps(
        {"name": "app", "version": "1.0.0", "dependencies": {"local": "file:./local"}}))
    text = await command_result(workdir, "npm install --offline --no-audit --no-fund --cache "
                                "/tmp/npm-cache 2>&1 | tail -1 && ls node_modules")
    assert "added 1 package" in text and "loopwright" not in text, text
    assert (workdir / "node_modules" / "local").is_symlink()
