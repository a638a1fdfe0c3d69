"""A root whose first walk takes too long (a network mount, millions of folders): the command
waits no longer (`planted.FIRST_WALK_SECONDS`, made 0 here), but protection must not switch
off silently for the rest of the process. The user is told once (a `workspace_scan` status the
terminal shows, and the result), the walk goes on in the background, and the commands after it
has ended are checked again.

Real bubblewrap and git, through `Agent` against the fake model server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sandbox_helpers import fsmonitor, host_git, run_calls_asking

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
    assert (workdir / "vendor" / "late" / ".git.made-by-command").is_dir(), results
    # the one the unchecked command made is the user's to look at now: held read-only
    assert "could not lock config file" in results[0] or "Read-only" in results[0], results
    assert statuses == []
