"""A root whose first walk takes too long (a network mount, millions of folders): the command
waits no longer (`planted.FIRST_WALK_SECONDS`, made 0 here), but protection must not switch
off silently for the rest of the process. The user is told once (a `workspace_scan` status the
terminal shows, and the result), the walk goes on in the background, and the commands after it
has ended are checked again.

Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import app, fsmonitor, host_git, host_python, plant_pyc, run_calls_asking

from loopwright.events import Event, StatusEvent
from loopwright.safety.sandbox import planted

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")


async def run_commands(workdir: Path, *commands: str) -> tuple[list[str], list[StatusEvent]]:
    """One run's `bash` calls: their results, and the `workspace_scan` statuses it sent."""
    events: list[Event] = []
    results, _ = await run_calls_asking(
        workdir, *(("bash", {"command": c}) for c in commands), approve_all=True,
        callbacks=[events.append])
    return results, [
        e for e in events if isinstance(e, StatusEvent) and e.kind == "workspace_scan"]


async def finished_walking(root: Path) -> None:
    for _ in range(200):
        if not planted.take(root).overflow:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the background walk did not end")


async def test_a_root_too_slow_to_walk_is_said_once_and_checked_once_walked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planted, "FIRST_WALK_SECONDS", 0.0)
    workdir = tmp_path / "work"
    (workdir / "vendor").mkdir(parents=True)
    canary = tmp_path / "FSMONITOR-RAN"
    results, statuses = await run_commands(workdir, "git init -q vendor/early && echo one",
                                           "echo two")
    assert "could not yet check what commands plant" in results[0], results
    assert "could not yet check" not in results[1]  # once
    [status] = statuses
    assert status.data["check"] == "planted" and str(workdir) in status.message
    await finished_walking(workdir)
    results, statuses = await run_commands(
        workdir, f"git init -q vendor/late && git -C vendor/late config core.fsmonitor "
        f"'{fsmonitor(canary)}'; git -C vendor/early config core.fsmonitor "
        f"'{fsmonitor(canary)}'; echo end")
    for folder in ("late", "early"):
        host_git(workdir / "vendor" / folder, "status")
    assert not canary.exists()
    # the one the unchecked command made too: it was made after the first walk began
    for folder in ("late", "early"):
        assert (workdir / "vendor" / folder / ".git.made-by-command").is_dir(), results
    assert statuses == []


def slow_root(workdir: Path, folders: int = 20_000) -> None:
    """A root whose walk takes longer than the first walk waits (made small for the test): a
    tree of empty folders, as a command could make (git status does not show them)."""
    for index in range(folders):
        (workdir / "deep" / f"a{index % 100}" / f"b{index}").mkdir(parents=True)


async def test_what_commands_plant_while_the_first_walk_runs_is_undone_when_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # they ran unchecked; without the check at the walk's end their plants were taken for the
    # user's files by the walk, and by every walk after it
    monkeypatch.setattr(planted, "FIRST_WALK_SECONDS", 0.05)
    workdir = app(tmp_path / "work")
    (workdir / "lib.py").write_text("VALUE = 1\n")
    assert host_python(workdir, "import app, lib").returncode == 0  # the user's own caches
    [users_cache] = (workdir / "__pycache__").glob("app.*.pyc")
    users = workdir / "vendor" / "users"
    users.mkdir(parents=True)
    assert host_git(users, "init", "-q").returncode == 0
    slow_root(workdir)
    canary = tmp_path / "PLANT-RAN"
    plant = plant_pyc(canary, source="lib.py")
    results, _ = await run_commands(
        workdir, f"{plant}\ngit init -q vendor/x && git -C vendor/x config core.fsmonitor "
        f"'{fsmonitor(canary)}' && mkdir -p pkg/.vscode && echo '{{}}' > pkg/.vscode/tasks.json"
        " && echo planted")
    assert "could not yet check what commands plant" in results[0], results
    assert host_git(users, "status").returncode == 0  # the user's git, meanwhile
    await finished_walking(workdir)
    later, _ = await run_commands(workdir, "echo later")
    results += later  # what the walk's end undid: in the result of the command that saw it
    for folder in (users, workdir / "vendor" / "x"):
        host_git(folder, "status")
    imported = host_python(workdir, "import app, lib; print(lib.VALUE)")
    assert not canary.exists() and imported.stdout == "the real app\n1\n", imported
    assert (workdir / "vendor" / "x" / ".git.made-by-command").is_dir(), results
    assert (workdir / "pkg" / ".vscode.made-by-command").is_dir(), results
    assert "removed 1 compiled Python file(s)" in "".join(results), results
    # the user's own: a cache written before, a repository whose index their git rewrote
    assert (users / ".git").is_dir() and users_cache.is_file()


async def test_what_commands_plant_is_undone_when_loopwright_ended_before_the_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a one-shot `loopwright run` that ends while the walk still runs: the next start's walk,
    # fast or not, must not take what that run's commands planted for the user's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    workdir = app(tmp_path / "work")
    (workdir / "lib.py").write_text("VALUE = 1\n")
    assert host_python(workdir, "import lib").returncode == 0  # the user's own cache
    [users_cache] = (workdir / "__pycache__").glob("lib.*.pyc")
    kept = users_cache.stat()
    canary = tmp_path / "PLANT-RAN"
    plant = (f"{plant_pyc(canary)}\ngit init -q vendor/x && git -C vendor/x config "
             f"core.fsmonitor '{fsmonitor(canary)}' && echo planted")
    first_run = f"""
import asyncio, pathlib, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from sandbox_helpers import run_calls_asking
from loopwright.safety.sandbox import planted
planted.FIRST_WALK_SECONDS = 0.0
planted._finish = lambda partial: None  # the process ends before the walk does
results, _ = asyncio.run(run_calls_asking(pathlib.Path({str(workdir)!r}),
                                          ("bash", {{"command": {plant!r}}}), approve_all=True))
print(results[0])
"""
    ended = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", first_run], capture_output=True, text=True,
        timeout=120, check=False)
    assert "planted" in ended.stdout and "could not yet check" in ended.stdout, ended
    # what the user does once that run has ended is theirs: a repository, a compiled module
    mine = workdir / "vendor" / "mine"
    mine.mkdir(parents=True)
    assert host_git(mine, "init", "-q").returncode == 0
    (workdir / "tool.py").write_text("VALUE = 2\n")
    assert host_python(workdir, "import tool").returncode == 0
    [later_cache] = (workdir / "__pycache__").glob("tool.*.pyc")
    results, _ = await run_commands(workdir, "echo later")
    host_git(workdir / "vendor" / "x", "status")
    imported = host_python(workdir, "import app")
    assert not canary.exists() and imported.stdout == "the real app\n", imported
    assert (workdir / "vendor" / "x" / ".git.made-by-command").is_dir(), results
    assert "removed 1 compiled Python file(s)" in results[0], results
    # the user's cache from before stays; once checked, no window is kept for the next start
    assert users_cache.stat().st_ino == kept.st_ino
    assert later_cache.is_file() and (mine / ".git").is_dir(), results
    assert list((tmp_path / "cache" / "loopwright" / "planted-walks").iterdir()) == []
