"""Issue 29, item 5: without bubblewrap, a command runs unasked only when what it names is
plainly harmless *where it really leads*: paths are resolved, symlinks included, before the
judgement. Replays `cat notes.txt` with `notes.txt -> ~/.ssh/id_rsa`, which ran unasked."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
CANARY = "CANARY-PRIVATE-KEY-6f1e"


def _workspace(tmp_path: Path, home: Path) -> Path:
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(CANARY + "\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "plain.txt").write_text(CANARY + " (a plain file of another project)\n")
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    (work / "README.md").write_text("hello\n")
    (work / "notes.txt").symlink_to(home / ".ssh" / "id_rsa")
    (work / "other").symlink_to(outside)
    (work / "docs" / "readme-link").symlink_to(work / "README.md")
    return work


async def _run(work: Path, command: str, approval: object = None) -> tuple[str, list[str]]:
    asked: list[str] = []

    def approve(action: str, detail: str) -> bool:
        asked.append(detail)
        return False

    script = [Reply(tool_calls=[call("bash", {"command": command})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(work), sandbox_bwrap="/nonexistent/bwrap",
                      **({"approval": approve} if approval else {}))
        result = await agent.run("go")
    [output] = tool_results(result.messages)
    return output, asked


@pytest.mark.parametrize("command", [
    "cat notes.txt", "head -n 5 notes.txt", "grep -n CANARY notes.txt", "cat other/plain.txt",
    "grep -fnotes.txt README.md", "grep --file=notes.txt README.md", "diff notes.txt README.md",
])
async def test_attack_a_symlink_out_of_the_workspace_is_not_read_unasked(
        tmp_path: Path, isolated_home: Path, command: str) -> None:
    work = _workspace(tmp_path, isolated_home)
    output, _ = await _run(work, command)
    assert "no sandbox is available" in output and "approval" in output
    assert CANARY not in output


async def test_attack_the_user_is_asked_with_the_command_shown(
        tmp_path: Path, isolated_home: Path) -> None:
    work = _workspace(tmp_path, isolated_home)
    output, asked = await _run(work, "cat notes.txt", approval=True)
    assert [detail.splitlines()[0] for detail in asked] == ["cat notes.txt"]
    assert CANARY not in output


@pytest.mark.parametrize("command", ["grep -R CANARY .", "grep -rRn CANARY docs",
                                     "diff -r docs other"])
async def test_attack_walking_into_symlinks_inside_a_directory_needs_approval(
        tmp_path: Path, isolated_home: Path, command: str) -> None:
    work = _workspace(tmp_path, isolated_home)
    output, _ = await _run(work, command)
    assert "no sandbox is available" in output
    assert CANARY not in output


@pytest.mark.parametrize("command", ["diff keys .", "diff . keys", "diff -q keys .",
                                     "diff --from-file=keys README.md"])
async def test_attack_diff_of_directories_reads_through_links_inside_them(
        tmp_path: Path, isolated_home: Path, command: str) -> None:
    # diff without -r still compares the files two directories share, through their links
    work = _workspace(tmp_path, isolated_home)
    (work / "keys").mkdir()
    (work / "keys" / "README.md").symlink_to(isolated_home / ".ssh" / "id_rsa")
    output, _ = await _run(work, command)
    assert "no sandbox is available" in output
    assert CANARY not in output


@pytest.mark.parametrize("command,expected", [
    ("cat README.md", "hello"),
    ("cat docs/readme-link", "hello"),  # a symlink that stays in the workspace
    ("grep -rn hello .", "README.md:1:hello"),  # -r does not follow links inside the tree
    ("ls -la", "notes.txt"),  # listing names reads no target
    ("diff README.md docs/readme-link", "[exit code 0]"),  # two files inside, a link among them
])
async def test_twin_plain_reads_inside_the_workspace_still_run_unasked(
        tmp_path: Path, isolated_home: Path, command: str, expected: str) -> None:
    work = _workspace(tmp_path, isolated_home)
    output, _ = await _run(work, command)
    assert expected in output and output.endswith("[exit code 0]"), output
    assert CANARY not in output
