"""Spilled tool outputs belong to their session: a command (real bubblewrap) or a file tool of
another session — the same project's or another's — cannot read them; the session's own can.

Before, every spill lay in one flat `$XDG_CACHE_HOME/loopwright/spill` every command could read:
a secret a test run printed in project A was readable by any command of project B.
Every directory lives outside /tmp (the sandbox's private /tmp would hide it and prove nothing).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import tool_results

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.output import SPILL_MARKER

pytestmark = pytest.mark.usefixtures("needs_bwrap")

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def loud(secret: str) -> str:
    """A command printing ~50 KB of lines holding `secret`: spilled under a 8k window."""
    return f"for i in $(seq 1 2000); do echo \"line $i {secret}\"; done"


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A host directory outside /tmp holding the cache and the projects."""
    path = Path(tempfile.mkdtemp(prefix="loopwright-spill-", dir="/var/tmp"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(path / "cache"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def run_calls(workdir: Path, session: str, calls: list[tuple[str, dict[str, Any]]],
                    **options: Any) -> list[str]:
    """One run of session `session` in `workdir` whose model makes `calls` (with the tools
    they name); their results."""
    script = [Reply(tool_calls=[call(name, arguments)]) for name, arguments in calls]
    with FakeModelServer(replies=[*script, Reply(text="done")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(names=sorted({name for name, _ in calls})),
                      workdir=str(workdir), session_id=session, context_window=8_192,
                      **options)
        result = await agent.run("go")
    return tool_results(result.messages)


def spilled_path(result: str) -> Path:
    match = re.search(re.escape(SPILL_MARKER) + r"(\S+)", result)
    assert match is not None, result
    return Path(match.group(1))


def spill_root(place: Path) -> Path:
    return place / "cache" / "loopwright" / "spill"


@pytest.mark.parametrize("same_project", [True, False])
async def test_another_sessions_spill_is_out_of_a_commands_reach(
        place: Path, same_project: bool) -> None:
    project_a = place / "a"
    project_b = project_a if same_project else place / "b"
    project_b.mkdir(parents=True, exist_ok=True)
    project_a.mkdir(exist_ok=True)
    [first] = await run_calls(project_a, "session-a", [("bash", {"command": loud("SECRET-A")})])
    spilled = spilled_path(first)
    assert spilled.is_file() and "SECRET-A" in spilled.read_text()
    root = spill_root(place)
    _, found, listed = await run_calls(project_b, "session-b", [
        ("bash", {"command": loud("OWN-B")}),
        ("bash", {"command": f"cat {spilled}; echo end"}),
        ("bash", {"command": f"grep -r -h -c -e SECRET-A -e OWN-B {root}; ls -A {root}"})])
    assert "SECRET-A" not in found and "No such file" in found
    assert found.endswith("end\n[exit code 0]")
    # its own spill, and only that, is there: no other session's directory, no key
    [count, own, *rest] = listed.splitlines()
    assert int(count) > 1000 and own.startswith("s-") and own != spilled.parent.name
    assert rest == ["[exit code 0]"]


async def test_a_sessions_own_commands_read_its_spill_back(place: Path) -> None:
    project = place / "project"
    project.mkdir()
    [first] = await run_calls(project, "session-a", [("bash", {"command": loud("SECRET-A")})])
    spilled = spilled_path(first)
    [again] = await run_calls(project, "session-a", [
        ("bash", {"command": f"sed -n '1000p' {spilled}; echo end"})])
    assert re.match(r"line \d+ SECRET-A\nend\n", again), again


async def test_a_spill_of_the_old_flat_layout_is_hidden_too(place: Path) -> None:
    # whose it was is unknown: another project's, as likely as not
    root = spill_root(place)
    root.mkdir(parents=True)
    (root / "20261101-120000-bash-1-0a1b2c3d.txt").write_text("old secret 4711\n")
    project = place / "project"
    project.mkdir()
    [found] = await run_calls(project, "session-b", [
        ("bash", {"command": f"cat {root}/*.txt; echo end"})])
    assert "old secret 4711" not in found and found.endswith("end\n[exit code 0]")


async def test_read_file_refuses_another_sessions_spill_in_a_workspace_holding_the_cache(
        place: Path) -> None:
    # a workspace that holds the cache (loopwright started in ~) lets the file tools reach it
    [first] = await run_calls(place, "session-a", [("bash", {"command": loud("SECRET-A")})])
    spilled = spilled_path(first)
    own, searched = await run_calls(place, "session-a", [
        ("read_file", {"path": str(spilled), "offset": 1000, "limit": 1}),
        ("grep", {"pattern": "line 1500 ", "path": str(spilled.parent)})])
    assert "SECRET-A" in own and "line 1500 SECRET-A" in searched
    [other, shown] = await run_calls(place, "session-b", [
        ("read_file", {"path": str(spilled)}), ("bash", {"command": f"cat {spilled}; echo end"})])
    assert "SECRET-A" not in shown and shown.endswith("end\n[exit code 0]")
    assert "SECRET-A" not in other and "another session's spilled output" in other
    [listed] = await run_calls(place, "session-b", [("grep", {"pattern": "SECRET-A",
                                                              "path": str(spilled.parent)})])
    assert "SECRET-A" not in listed and "another session's spilled output" in listed


async def test_read_file_refuses_another_sessions_spill_under_a_cache_dir_of_the_settings(
        place: Path) -> None:
    # an agent with file tools alone (no sandbox made) whose `cache_dir` lies in the workspace
    (place / "big.txt").write_text("".join(f"line {n} SECRET-A\n" for n in range(3_000)))
    options = {"cache_dir": str(place / "my-cache")}
    [first] = await run_calls(place, "session-a", [("read_file", {"path": "big.txt"})], **options)
    spilled = spilled_path(first)
    assert spilled.is_relative_to(place / "my-cache")
    [own] = await run_calls(place, "session-a", [("read_file", {"path": str(spilled),
                                                                "limit": 1})], **options)
    assert "SECRET-A" in own
    [other] = await run_calls(place, "session-b", [("read_file", {"path": str(spilled)})],
                              **options)
    assert "SECRET-A" not in other and "another session's spilled output" in other
