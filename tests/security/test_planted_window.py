"""While a root's first walk has not ended, what commands plant there is checked afterwards by
ctime (`planted.FIRST_WALK_SECONDS`, made 0 here): the window is the time those unchecked
commands ran. Two commands at once (sub-agents delegated in one reply) must not close it at
the end of the shorter one while the longer one still plants; and what the user writes outside
any command's run is theirs, not taken for a command's.

Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import FAST, app, fsmonitor, host_git, host_python, plant_pyc
from test_planted_first_walk import finished_walking, run_commands

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.safety.sandbox import planted
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call
from shared_helpers import wait_until

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

CHILD_MARK = CHILD_PROMPT.splitlines()[0]


def bash(command: str) -> Reply:
    return Reply(tool_calls=[call("bash", {"command": command})])


def waiting_for(signal: str, then: str) -> str:
    """A command that waits (ten seconds at most) for the file `signal`, then runs `then`."""
    return (f"for i in $(seq 500); do [ -e {signal} ] && break; sleep 0.02; done; {then}")


async def test_a_shorter_command_ending_does_not_close_the_window_of_a_longer_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the longer command began while the first walk ran (unchecked), the shorter one once it
    # had ended; the shorter one's end closed the window, so the hook the longer one then
    # configured in a repository that was there was taken for the user's
    monkeypatch.setattr(planted, "FIRST_WALK_SECONDS", 0.0)
    workdir = tmp_path / "work"
    vendored = workdir / "vendor" / "x"
    vendored.mkdir(parents=True)
    assert host_git(vendored, "init", "-q").returncode == 0
    canary = tmp_path / "FSMONITOR-RAN"
    longer = waiting_for("go", f"git -C vendor/x config core.fsmonitor '{fsmonitor(canary)}' "
                         "&& echo planted")
    results: dict[str, list[str]] = {}

    async def handler(request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        step = sum(1 for m in messages if m["role"] == "assistant")
        results[task] = [m["content"] for m in messages if m["role"] == "tool"]
        if CHILD_MARK not in str(messages[0]["content"]):
            if step:
                return Reply("done")
            return Reply(tool_calls=[call("delegate", {"task": t, "tools": ["bash"]})
                                     for t in ("longer", "shorter")])
        if task == "longer":
            return bash(f"touch started; {longer}") if step == 0 else Reply("longer done")
        if step == 0:  # the longer one runs, unchecked, and the walk has ended
            await wait_until((workdir / "started").exists, "the longer command started")
            await finished_walking(workdir)
            return bash("echo short")
        (workdir / "go").touch()  # the shorter one has ended, and been checked
        return Reply("shorter done")

    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[*default_tools(names=["bash"]), make_delegate_tool()],
                      workdir=str(workdir), approve_all=True)
        assert (await agent.run("go")).output == "done"
    assert "planted" in results["longer"][0], results
    host_git(vendored, "status")
    assert not canary.exists()
    assert (vendored / ".git.made-by-command").is_dir(), results


async def test_what_the_user_writes_while_no_command_runs_stays_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # before, anything written from the first walk's start until a command that began after
    # its end had ended was taken for a command's: the user's new repository and their edit of
    # one they had were moved aside, their compiled module removed
    monkeypatch.setattr(planted, "FIRST_WALK_SECONDS", 0.0)
    workdir = app(tmp_path / "work")
    (workdir / "lib.py").write_text("VALUE = 1\n")
    users = workdir / "vendor" / "users"
    users.mkdir(parents=True)
    assert host_git(users, "init", "-q").returncode == 0
    canary = tmp_path / "PLANT-RAN"
    results, _ = await run_commands(
        workdir, f"{plant_pyc(canary, source='lib.py')}\ngit init -q vendor/x && git -C "
        f"vendor/x config core.fsmonitor '{fsmonitor(canary)}' && echo planted")
    assert "could not yet check what commands plant" in results[0], results
    # the user, once that command has ended: a repository, a setting, a compiled module
    mine = workdir / "vendor" / "mine"
    mine.mkdir()
    assert host_git(mine, "init", "-q").returncode == 0
    assert host_git(users, "config", "user.name", "me").returncode == 0
    (workdir / "tool.py").write_text("VALUE = 2\n")
    assert host_python(workdir, "import tool").returncode == 0
    [users_cache] = (workdir / "__pycache__").glob("tool.*.pyc")
    await finished_walking(workdir)
    later, _ = await run_commands(workdir, "echo later")
    results += later
    host_git(workdir / "vendor" / "x", "status")
    imported = host_python(workdir, "import lib; print(lib.VALUE)")
    assert not canary.exists() and imported.stdout == "1\n", imported
    assert (workdir / "vendor" / "x" / ".git.made-by-command").is_dir(), results
    assert (mine / ".git").is_dir() and (users / ".git").is_dir(), results
    assert users_cache.is_file(), results


async def test_a_mercurial_repository_at_the_top_the_user_changes_meanwhile_stays(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `.hg` at the top, where it exists, is read-only to every command: a change within an
    # unchecked command's span is the user's (`hg` writing its settings), not the command's
    monkeypatch.setattr(planted, "FIRST_WALK_SECONDS", 0.0)
    workdir = tmp_path / "work"
    (workdir / ".hg").mkdir(parents=True)
    settings = workdir / ".hg" / "hgrc"
    settings.write_text("[ui]\nusername = me\n")
    running = asyncio.ensure_future(run_commands(
        workdir, "touch started; " + waiting_for("go", "echo ended")))
    await wait_until((workdir / "started").exists, "the command started")
    settings.write_text("[ui]\nusername = me <me@example.com>\n")  # the user, meanwhile
    (workdir / "go").touch()
    results, _ = await running
    await finished_walking(workdir)
    results += (await run_commands(workdir, "echo later"))[0]
    assert "ended" in results[0] and "loopwright moved" not in "".join(results), results
    assert settings.read_text() == "[ui]\nusername = me <me@example.com>\n"


CUT_OFF_RUN = """
import asyncio, pathlib, sys
sys.path.insert(0, {tests!r})
from sandbox_helpers import FAST
from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.safety.sandbox import planted
from loopwright.testing import FakeModelServer, Reply, call
planted.FIRST_WALK_SECONDS = 0.0
planted._finish = lambda partial: None  # the process is killed before the walk ends
workdir = pathlib.Path({workdir!r})

async def handler(request):
    messages = request.body["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    step = sum(1 for m in messages if m["role"] == "assistant")
    if CHILD_PROMPT.splitlines()[0] not in str(messages[0]["content"]):
        return Reply(tool_calls=[call("delegate", {{"task": t, "tools": ["bash"]}})
                                 for t in ("longer", "shorter")]) if step == 0 else Reply("done")
    if task == "longer":
        return Reply(tool_calls=[call("bash", {{"command": {longer!r}}})])
    if step == 0:
        while not (workdir / "started").exists():
            await asyncio.sleep(0.02)
        return Reply(tool_calls=[call("bash", {{"command": "echo short"}})])
    (workdir / "go").touch()  # the shorter one has ended
    return Reply("shorter done")

async def main():
    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[*default_tools(names=["bash"]), make_delegate_tool()],
                      workdir=str(workdir), approve_all=True)
        await agent.run("go")

asyncio.run(main())
"""


async def test_a_command_still_running_when_loopwright_is_killed_is_checked_at_the_next_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the shorter command's end closed what was kept for the next start at that end, so what
    # the longer one planted afterwards, before loopwright was killed, was taken for the user's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    workdir = tmp_path / "work"
    vendored = workdir / "vendor" / "x"
    vendored.mkdir(parents=True)
    assert host_git(vendored, "init", "-q").returncode == 0
    canary = tmp_path / "FSMONITOR-RAN"
    longer = "touch started; " + waiting_for("go", (
        f"git -C vendor/x config core.fsmonitor '{fsmonitor(canary)}' && touch planted; "
        "sleep 120"))
    script = CUT_OFF_RUN.format(tests=str(Path(__file__).parent), workdir=str(workdir),
                                longer=longer)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    try:
        await wait_until(lambda: (workdir / "planted").exists() or process.poll() is not None,
                         "the longer command planted", limit=60)
    finally:
        process.kill()
        output = await asyncio.to_thread(process.communicate)
    assert (workdir / "planted").exists(), output
    results, _ = await run_commands(workdir, "echo later")
    host_git(vendored, "status")
    assert not canary.exists()
    assert (vendored / ".git.made-by-command").is_dir(), results
