"""What loopwright reads on the host after a sandboxed command — the files it changed, to show
them as diffs — follows no symlink the command planted: a command cannot make loopwright read a
file the sandbox hides from it (`~/.ssh/id_rsa`, the serve token, loopwright's own process's
`/proc/self/environ`) and put it on the terminal, in the session store and in `RunResult.diff`."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.usefixtures("needs_bwrap")

FAST = RetryPolicy(base_delay=0.01, jitter=0)
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- host-only"


@pytest.fixture
def secrets() -> Iterator[Path]:
    """A host directory outside the workspace holding a key (outside /tmp, which the sandbox
    replaces: the command cannot read it, only name it)."""
    path = Path(tempfile.mkdtemp(prefix="loopwright-secrets-", dir="/var/tmp"))
    (path / "id_rsa").write_text(SECRET + "\n")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def run_commands(workdir: Path, *commands: str) -> tuple[str, str]:
    """Each command in its own turn; every turn's diff joined, and the run's diff."""
    events: list[Event] = []
    script = [*(Reply(tool_calls=[call("bash", {"command": c})]) for c in commands),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), callbacks=[events.append],
                      approve_all=True)
        result = await agent.run("tidy up")
    assert result.stop_reason == "completed", result.error
    turns = "".join(e.data["diff"] for e in events
                    if isinstance(e, StatusEvent) and e.kind == "turn_diff")
    return turns, result.diff or ""


async def test_a_link_planted_to_a_hidden_file_is_shown_as_a_link_not_read(
        tmp_path: Path, secrets: Path) -> None:
    turns, total = await run_commands(
        tmp_path, f"ln -s {secrets}/id_rsa key.txt && ln -s /proc/self/environ env.txt")
    for diff in (turns, total):
        assert SECRET not in diff and "API_KEY" not in diff
        assert f"b/key.txt is a symlink to {secrets}/id_rsa\n" in diff
        assert "b/env.txt is a symlink to /proc/self/environ\n" in diff


async def test_a_directory_swapped_for_a_link_between_commands_is_not_read_through(
        tmp_path: Path, secrets: Path) -> None:
    turns, total = await run_commands(
        tmp_path, "mkdir keys && echo decoy > keys/id_rsa",
        f"rm -r keys && ln -s {secrets} keys")
    for diff in (turns, total):
        assert SECRET not in diff
    assert f"b/keys is a symlink to {secrets}\n" in turns
    assert "--- a/keys/id_rsa\n+++ /dev/null\n@@ -1 +0,0 @@\n-decoy\n" in turns


async def test_links_inside_the_workspace_and_plain_files_are_still_diffed(
        tmp_path: Path) -> None:
    (tmp_path / "old").symlink_to("a.txt")
    turns, total = await run_commands(
        tmp_path, "echo text > a.txt && ln -s a.txt b.txt && ln -sfn b.txt old && : > empty")
    assert "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+text\n" in turns
    assert "b/b.txt is a symlink to a.txt\n" in turns
    assert "a/old is a symlink to a.txt\nb/old is a symlink to b.txt\n" in turns
    assert "empty" not in turns  # an empty file created is no change of content, as before
    assert total == turns
