"""The SQLite session store on its own: fidelity, schema, errors, search, leases, many writers."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.errors import SessionError
from loopwright.messages import Message, ToolCall, Usage, assistant, tool_result, user
from loopwright.store import RunRecord, SessionStore, open_store
from loopwright.store.postgres import PostgresStore
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SNIPPET_END, SNIPPET_START, SQLiteStore
from loopwright.store.threaded import ThreadedStore
from shared_helpers import run_in_processes


def rich_history() -> list[Message]:
    call = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}')
    return [
        user("Read a.txt — ünïcode and\nnewlines"),
        Message(role="assistant", content="Let me look.", tool_calls=[call],
                reasoning="The user wants the file.",
                provider_data={"anthropic_messages": {"thinking": [
                    {"type": "thinking", "thinking": "t", "signature": "sig=="}]}}),
        tool_result(call, "line 1\nline 2"),
        Message(role="tool", content="boom", tool_call_id="call_x", name="x", is_error=True),
        assistant("It has two lines."),
    ]


def test_messages_round_trip_with_full_fidelity(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s1", model="m", cwd="/w", title="read")
        for message in rich_history():
            store.append("s1", message)
        assert store.load("s1") == rich_history()
    with SQLiteStore(tmp_path / "s.db") as reopened:  # and it is durable
        assert [m.to_dict() for m in reopened.load("s1")] == [
            m.to_dict() for m in rich_history()]


def test_open_store_understands_paths_directories_and_none(tmp_path: Path) -> None:
    assert open_store(None) is None
    assert open_store("none") is None
    by_dir = open_store(tmp_path)
    assert isinstance(by_dir, ThreadedStore)  # SQLite runs on a worker thread of its own
    assert by_dir.sync.path == tmp_path / "sessions.db"
    default = open_store(True, data_dir=tmp_path / "data")
    assert isinstance(default, ThreadedStore)
    assert default.sync.path == tmp_path / "data" / "sessions.db"
    assert isinstance(default, SessionStore)
    assert open_store(default) is default
    blocking = SQLiteStore(tmp_path / "b.db")
    wrapped = open_store(blocking)
    assert isinstance(wrapped, ThreadedStore) and wrapped.sync is blocking
    postgres = open_store("postgresql://u:secret@db.example/sessions")
    assert isinstance(postgres, PostgresStore) and "secret" not in repr(postgres)


def test_schema_version_is_recorded_and_wal_is_on(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.db").close()
    db = sqlite3.connect(tmp_path / "s.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.db").close()
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(SessionError, match="newer than this loopwright understands"):
        SQLiteStore(tmp_path / "s.db")


def test_a_write_the_schema_refuses_is_not_called_a_corrupt_file(tmp_path: Path) -> None:
    """A child session whose parent does not exist: the store says what failed, and does not
    tell the user to move a sound file aside."""
    with SQLiteStore(tmp_path / "s.db") as store:
        with pytest.raises(SessionError) as raised:
            store.create("child", parent_id="no-such-parent")
        message = str(raised.value)
        assert "FOREIGN KEY constraint failed" in message and "not damaged" in message
        assert "corrupt" not in message and "move it aside" not in message
        store.create("parent")
        store.create("child", parent_id="parent")  # the file goes on working
        assert [s.id for s in store.children("parent")] == ["child"]


def test_a_corrupt_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(SessionError, match="not a loopwright session database or is corrupt"):
        SQLiteStore(path)


def test_another_programs_database_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(SessionError, match="not a loopwright session store"):
        SQLiteStore(path)


def test_a_locked_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = SQLiteStore(path, timeout=0.1)
        with pytest.raises(SessionError, match="locked by another process"):
            store.create("s1")
    finally:
        holder.execute("ROLLBACK")
    store.create("s1")  # fine once the lock is gone
    assert store.get("s1") is not None


def test_search_finds_words_with_snippets_and_stems(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("a1", title="deploy")
        store.create("b2", title="other")
        store.append("a1", user("How do I deploy the billing service to staging?"))
        store.append("a1", assistant("Run the deploy script with --env staging."))
        store.append("b2", user("Unrelated question about parsers"))
        hits = store.search("deploying staging")
        assert {h.session_id for h in hits} == {"a1"}
        assert len(hits) == 2
        assert f"{SNIPPET_START}staging{SNIPPET_END}" in hits[0].snippet
        assert store.search("staging", exclude_session="a1") == []
        assert store.search('"unbalanced (quote AND') == []  # free text never breaks FTS syntax
        assert [h.session_id for h in store.search("parsers staging", any_word=True)] != []


def test_ids_resolve_from_unique_prefixes(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("abc123")
        store.create("abd456")
        assert store.resolve("abc") == "abc123"
        assert store.resolve("abd456") == "abd456"
        with pytest.raises(SessionError, match="matches several sessions"):
            store.resolve("ab")
        with pytest.raises(SessionError, match="no session matches"):
            store.resolve("zz")


def test_delete_removes_messages_runs_events_and_search_rows(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s1")
        store.append("s1", user("needle in a haystack"))
        store.record_run("s1", RunRecord(run_id="r1"))
        store.record_events("s1", "r1", [{"type": "turn_start", "turn": 1}])
        store.delete("s1")
        assert store.get("s1") is None
        assert store.load("s1") == []
        assert store.events("s1") == []
        assert store.search("needle") == []


def test_session_totals_sum_runs_and_unknown_cost_stays_unknown(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s1")
        store.record_run("s1", RunRecord(run_id="r1", stop_reason="completed", cost=0.5,
                                         usage=Usage(input_tokens=10, output_tokens=2,
                                                     requests=1)), ended=True)
        store.record_run("s1", RunRecord(run_id="r2", stop_reason="completed", cost=0.25,
                                         usage=Usage(input_tokens=5, output_tokens=1,
                                                     requests=1)), ended=True)
        info = store.get("s1")
        assert info is not None
        assert (info.usage.input_tokens, info.usage.output_tokens, info.runs) == (15, 3, 2)
        assert info.cost == pytest.approx(0.75)
        assert info.stop_reason == "completed"
        store.record_run("s1", RunRecord(run_id="r3", cost=None,
                                         usage=Usage(input_tokens=1, requests=1)))
        info = store.get("s1")
        assert info is not None
        assert info.cost is None
        assert info.stop_reason == "interrupted"  # r3 never ended and holds no lease


def test_a_live_lease_excludes_other_runs(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s1")
        store.acquire("s1", "owner-a")
        with pytest.raises(SessionError, match=rf"in use by another run \(pid {os.getpid()}\)"):
            store.acquire("s1", "owner-b")
        store.acquire("s1", "owner-a")  # the holder may take it again
        store.release("s1", "owner-a")
        store.acquire("s1", "owner-b")


def test_a_lease_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        store.create("s1")
    child = subprocess.run(
        [sys.executable, "-c",
         "import sys; from loopwright.store.sqlite import SQLiteStore; "
         "SQLiteStore(sys.argv[1]).acquire('s1', 'dead-owner')", str(path)],
        check=True, timeout=30)
    assert child.returncode == 0
    with SQLiteStore(path) as store:
        store.acquire("s1", "me")  # the holder's pid is gone: no error


def _write_session(path: str, session_id: str, count: int) -> None:
    store = SQLiteStore(path, timeout=30)
    store.create(session_id, title=session_id)
    store.acquire(session_id, f"owner-{session_id}")
    for n in range(count):
        store.append(session_id, user(f"{session_id} message {n}"))
    store.release(session_id, f"owner-{session_id}")
    store.close()


def test_several_processes_write_their_sessions_to_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    SQLiteStore(path).close()
    run_in_processes(_write_session, [(path, f"w{n}", 150) for n in range(4)], timeout=60)
    with SQLiteStore(path) as store:
        for n in range(4):
            texts = [m.content for m in store.load(f"w{n}")]
            assert texts == [f"w{n} message {k}" for k in range(150)]
        assert len(store.list_sessions(limit=10)) == 4
