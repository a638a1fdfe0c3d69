"""Files a `bash` command changes in the workspace show up as diffs, like the file tools' changes:
the same `turn_diff` status and the run's total diff (`loopwright.builtin.workspace_scan`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.builtin import default_tools, workspace_scan
from loopwright.builtin.workspace_scan import ScanLimits, compare, scan_workspace
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
THREE_CHANGES = "echo x >> a.txt && rm b.txt && printf 'new\\n' > c.txt"


def statuses(events: list[Event], kind: str) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == kind]


async def run_bash(workdir: Path, *commands: str, **agent_options: object
                   ) -> tuple[list[Event], str]:
    events: list[Event] = []
    script = [*(Reply(tool_calls=[call("bash", {"command": c})]) for c in commands),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), callbacks=[events.append],
                      approve_all=True, **agent_options)
        result = await agent.run("change files with bash")
    assert result.stop_reason == "completed", result.error
    return events, result.diff or ""


async def test_created_deleted_and_modified_files_are_diffed(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("bee\n")
    events, total = await run_bash(tmp_path, THREE_CHANGES)
    (turn,) = statuses(events, "turn_diff")
    assert turn.data["files"] == ["a.txt", "b.txt", "c.txt"]
    assert turn.message == "turn changed 3 files (+2/−1)"
    diff = turn.data["diff"]
    assert "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+x\n" in diff
    assert "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bee\n" in diff
    assert "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+new\n" in diff
    assert total == diff


async def test_read_only_commands_and_skipped_directories_report_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    events, total = await run_bash(
        tmp_path, "cat a.txt", "mkdir -p node_modules/x .git && echo 1 > node_modules/x/i.js "
        "&& echo 2 > .git/HEAD")
    assert statuses(events, "turn_diff") == []
    assert total == ""


async def test_each_command_reports_its_own_turn_and_the_run_keeps_the_first_original(
        tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    events, total = await run_bash(tmp_path, "echo two > a.txt", "echo three > a.txt")
    first, second = statuses(events, "turn_diff")
    assert "-one\n+two\n" in first.data["diff"]
    assert "-two\n+three\n" in second.data["diff"]
    assert "-one\n+three\n" in total


async def test_big_and_binary_files_are_reported_changed_without_lines(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("line\n" * 100_000)  # 500 kB: over the per-file cap
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    events, _ = await run_bash(tmp_path, "echo more >> big.log && printf '\\3' >> blob.bin")
    (turn,) = statuses(events, "turn_diff")
    assert turn.data["files"] == ["big.log", "blob.bin"]
    assert "Files a/big.log and b/big.log differ (too large or binary to diff)" in turn.data[
        "diff"]
    assert "line\n" not in turn.data["diff"]


async def test_a_workspace_over_the_file_cap_gives_one_note_and_no_diffs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index in range(30):
        (tmp_path / f"f{index}.txt").write_text("x\n")
    monkeypatch.setattr(workspace_scan, "LIMITS", ScanLimits(max_files=10))
    scans: list[Path] = []
    real_scan = workspace_scan.scan_workspace

    def counted(root: Path, **options: Any) -> workspace_scan.Scan:
        scans.append(root)
        return real_scan(root, **options)

    monkeypatch.setattr(workspace_scan, "scan_workspace", counted)
    events, total = await run_bash(tmp_path, "echo y > f1.txt", "echo z > f2.txt")
    assert len(scans) == 1  # a big workspace is walked once per run, not before every command
    (note,) = statuses(events, "workspace_scan")  # once per run, not per command
    assert note.message == ("the workspace has more than 10 files, so files changed by bash "
                            "are not shown as diffs")
    assert statuses(events, "turn_diff") == []
    assert total == ""


def test_a_scan_reuses_kept_content_for_unchanged_files(tmp_path: Path) -> None:
    (tmp_path / "same.txt").write_text("same\n")
    (tmp_path / "moved.txt").write_text("before\n")
    first = scan_workspace(tmp_path)
    os.utime(tmp_path / "moved.txt", ns=(1, 1))
    second = scan_workspace(tmp_path, previous=first)
    assert second.entries[str(tmp_path / "same.txt")] is first.entries[str(tmp_path / "same.txt")]
    assert compare(first, second).modified == [str(tmp_path / "moved.txt")]
    assert second.entries[str(tmp_path / "moved.txt")].content == b"before\n"


async def test_loopwrights_own_files_in_the_workspace_are_left_out(tmp_path: Path) -> None:
    """The data directory and session database may lie inside the workspace, and loopwright
    writes them in the background (the store, memory learning after a chat turn), so their
    changes are never reported as the command's. Here the command touches them itself, which
    makes the timing certain."""
    data = tmp_path / ".loopwright"
    store = tmp_path / "db" / "sessions.db"
    events, total = await run_bash(
        tmp_path, "echo x > a.txt && mkdir -p .loopwright && echo learned >> .loopwright/m.md "
        "&& echo y >> db/sessions.db-wal", store=str(store), data_dir=str(data))
    (turn,) = statuses(events, "turn_diff")
    assert turn.data["files"] == ["a.txt"]
    assert ".loopwright" not in total and "sessions.db" not in total


async def test_a_command_changing_many_files_shows_the_first_ones_and_counts_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace_scan, "LIMITS", ScanLimits(max_changed_files=3))
    events, _ = await run_bash(tmp_path, "for n in 1 2 3 4 5; do echo $n > f$n.txt; done")
    (note,) = statuses(events, "workspace_scan")
    assert note.message == "the command changed 5 files; diffs are shown for the first 3"
    (turn,) = statuses(events, "turn_diff")
    assert turn.data["files"] == ["f1.txt", "f2.txt", "f3.txt"]


def test_a_scan_that_takes_too_long_gives_up_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_text("x\n")
    slow = scan_workspace(tmp_path, limits=ScanLimits(max_seconds=-1))  # every walk is too slow
    assert slow.overflow == "scanning the workspace took over -1s"
    assert scan_workspace(tmp_path).overflow is None
