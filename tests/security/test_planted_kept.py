"""`git init packages/foo`, asked for: a repository a command makes below the top is moved
aside (`planted.py`), and the user is asked — a person, never `approve_all` / `--yes` — whether
to keep it. Yes puts it back; no, or nobody to ask, leaves it aside: a model's command keeps
none unasked. Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import FAST, host_git, tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.safety.sandbox import planted
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

KEEP = "bash: keep the git repositories a command made"


async def run_answering(workdir: Path, command: str, answer: bool | None, *,
                        approve_all: bool = False) -> tuple[str, list[tuple[str, str]]]:
    """One `bash` call; each question answered `answer` (None: no one to ask). The result,
    and what was asked."""
    asked: list[tuple[str, str]] = []

    def approval(action: str, detail: str) -> bool:
        asked.append((action, detail))
        return bool(answer)

    script = [Reply(tool_calls=[call("bash", {"command": command})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approve_all=approve_all,
                      approval=None if answer is None else approval)
        result = await agent.run("go")
    [text] = tool_results(result.messages)
    return text, asked


async def test_a_repository_the_user_says_to_keep_is_put_back(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "packages").mkdir(parents=True)
    text, asked = await run_answering(workdir, "git init -q packages/foo && echo made", True)
    [detail] = [detail for action, detail in asked if action == KEEP]
    assert "git init -q packages/foo" in detail and "packages/foo/.git" in detail, detail
    assert (workdir / "packages" / "foo" / ".git").is_dir(), text
    assert not (workdir / "packages" / "foo" / ".git.made-by-command").exists()
    assert "kept the repository the command made" in text, text
    assert host_git(workdir / "packages" / "foo", "status").returncode == 0


@pytest.mark.parametrize(("answer", "approve_all"), [(False, False), (None, True), (None, False)],
                         ids=["the user says no", "approve_all, no one to ask", "no one to ask"])
async def test_a_repository_no_person_said_to_keep_stays_aside(
        tmp_path: Path, answer: bool | None, approve_all: bool) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text, asked = await run_answering(workdir, "git init -q packages/foo && echo made", answer,
                                      approve_all=approve_all)
    assert [action for action, _ in asked] == ([KEEP] if answer is not None else [])
    assert not (workdir / "packages" / "foo" / ".git").exists()
    assert (workdir / "packages" / "foo" / ".git.made-by-command").is_dir()
    assert "moved a repository" in text and "kept" not in text, text


async def test_a_command_that_makes_no_repository_asks_nothing(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text, asked = await run_answering(workdir, "mkdir -p pkg/.vscode packages/foo && echo made",
                                      True)
    assert [action for action, _ in asked if action == KEEP] == [], asked
    assert (workdir / "pkg" / ".vscode.made-by-command").is_dir(), text  # not a repository


async def test_a_bare_repository_the_user_says_to_keep_gets_its_head_back(
        tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text, asked = await run_answering(workdir, "git init -q --bare mirror.git && echo made", True)
    assert [action for action, _ in asked if action == KEEP] == [KEEP]
    assert (workdir / "mirror.git" / "HEAD").is_file(), text
    assert not (workdir / "mirror.git" / "HEAD.made-by-command").exists()


def test_a_repository_changed_while_it_was_aside_is_not_put_back(tmp_path: Path) -> None:
    # a command running meanwhile (a sub-agent's) writes a core.fsmonitor into the moved-aside
    # repository while the user is being asked: a yes must not put that back
    root = tmp_path / "work"
    root.mkdir()
    before = planted.take(root)
    assert host_git(root, "init", "-q", "pkg").returncode == 0  # as a command would
    [moved] = planted.undo(before).repositories
    with (moved.aside / "config").open("a") as config:
        config.write("[core]\n\tfsmonitor = touch /tmp/x\n")
    line = planted.put_back(moved)
    assert "changed after it was moved aside" in line, line
    assert not (root / "pkg" / ".git").exists() and moved.aside.is_dir()
