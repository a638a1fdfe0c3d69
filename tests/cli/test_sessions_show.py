"""`loopwright sessions show`: pages of a long session, its lineage, sub-agents and turn costs."""

from __future__ import annotations

from pathlib import Path

from test_sessions import sessions

from loopwright.messages import Usage, assistant, user
from loopwright.store.sqlite import SQLiteStore


def db_of(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sessions.db"


def test_show_prints_one_page_at_a_time_and_all_on_request(tmp_path: Path) -> None:
    with SQLiteStore(db_of(tmp_path)) as store:
        store.create("long", title="a long one")
        store.append_many("long", [user(f"message number {n}") for n in range(1, 121)])
    first = sessions(tmp_path, "show", "long")
    assert first.exit_code == 0, first.output
    assert "message number 50\n" in first.output and "message number 51\n" not in first.output
    assert "page 1 of 3 (messages 1–50 of 120); --page 2 for the next" in first.output
    third = sessions(tmp_path, "show", "long", "--page", "3")
    assert "message number 101\n" in third.output and "message number 100\n" not in third.output
    every = sessions(tmp_path, "show", "long", "--all")
    assert all(f"message number {n}\n" in every.output for n in range(1, 121))
    assert "page " not in every.output
    past = sessions(tmp_path, "show", "long", "--page", "9")
    assert past.exit_code == 1 and "3 page(s)" in past.output


def test_show_displays_the_lineage_sub_agents_and_turn_costs(tmp_path: Path) -> None:
    with SQLiteStore(db_of(tmp_path)) as store:
        store.create("parent", title="the job")
        store.append_many("parent", [user("do the job"), assistant("working on it")])
        store.compact("parent", [user("do the job"), user("[summary of the start]")])
        store.append("parent", assistant("done after compaction"))
        store.create("child-1", title="find the number", parent_id="parent")
        store.append("child-1", user("find the number"))
        store.record_turn("parent", "run-1", 1, Usage(input_tokens=1200, output_tokens=30,
                                                      requests=1), 0.0123)
    shown = sessions(tmp_path, "show", "parent", "--turns")
    assert shown.exit_code == 0, shown.output
    assert "compacted 1×" in shown.output and "epoch 1 (live): 3 messages" in shown.output
    assert "done after compaction" in shown.output and "working on it" not in shown.output
    assert "child-1" in shown.output and "find the number" in shown.output
    assert "1,200" in shown.output and "$0.0123" in shown.output
    before = sessions(tmp_path, "show", "parent", "--epoch", "0")
    assert "working on it" in before.output and "done after compaction" not in before.output
    child = sessions(tmp_path, "show", "child-1")
    assert "sub-agent of parent" in child.output


def test_show_diffs_prints_each_turns_file_changes(tmp_path: Path) -> None:
    from loopwright import Agent
    from loopwright.builtin import default_tools
    from loopwright.testing import FakeModelServer, Reply, call

    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    script = [Reply(tool_calls=[call("bash", {"command": "echo x >> a.txt"})]),
              Reply(tool_calls=[call("write_file", {"path": "b.txt", "content": "bee\n"})]),
              Reply("Done.")]
    with FakeModelServer(script) as server:
        Agent("m", base_url=server.base_url, api_key="k", tools=default_tools(),
              workdir=str(work), approve_all=True, store=db_of(tmp_path),
              session_id="changes-1").chat("Change things")
    shown = sessions(tmp_path, "show", "changes", "--diffs")
    assert shown.exit_code == 0, shown.output
    out = shown.output
    assert "turn changed 1 file (+1/−0)" in out
    assert "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+x\n" in out
    assert "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+bee\n" in out
    assert out.index("+x") < out.index("+bee")
    with SQLiteStore(db_of(tmp_path)) as store:
        store.create("quiet")
    assert "no file changes recorded" in sessions(tmp_path, "show", "quiet", "--diffs").output


def test_show_events_says_each_status_note_whole(tmp_path: Path) -> None:
    note = ("bash (superuser command): denied: it needs the user's approval and no user is "
            "available to give it (non-interactive run; the user can allow such actions with "
            "--yes or approve_all=True)")
    with SQLiteStore(db_of(tmp_path)) as store:
        store.create("denied")
        store.record_events("denied", "run-1", [
            {"type": "status", "kind": "approval", "message": note,
             "data": {"tool": "bash", "reason": "x" * 400}}])
    shown = sessions(tmp_path, "show", "denied", "--events")
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert f"status approval: {note}" in flat  # the fix at its end is not cut
    assert "x" * 400 not in flat  # raw data still is
