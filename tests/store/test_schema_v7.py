"""Schema v7 (issue 30 item 5): a turn's transaction writes two B-trees fewer. A `model_call`
event is stored whole in its events row, not slim there and whole again in `model_calls` (a table
and its index); readers see the same events and records. A database the v6 schema made opens with
every event and model call it had, in order, and goes on recording."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from loopwright.errors import SessionError
from loopwright.store.calls import CALL_COLUMNS, split_model_call
from loopwright.store.rows import record_json
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from shared_helpers import schema_file


def model_call(call_id: str, turn: int) -> dict[str, Any]:
    return {"type": "model_call", "record": {
        "id": call_id, "purpose": "turn", "run_id": "r1", "session_id": "old", "agent": "",
        "turn": turn, "model": "m", "provider": "p", "endpoint": "http://127.0.0.1:9/v1",
        "mode": "chat_completions", "started": float(turn), "latency": 0.5, "attempts": 1,
        "streamed": True, "request": {"messages": turn, "tools": ["lookup"]},
        "response": {"content": f"reply {turn}", "tool_calls": []},
        "usage": {"input_tokens": 10 * turn, "output_tokens": 1, "cache_read_tokens": 0,
                  "cache_write_tokens": 0, "reasoning_tokens": 0, "requests": 1},
        "cost": None, "error": None, "status": None}}


def turn_events(call_id: str, turn: int) -> list[dict[str, Any]]:
    return [{"type": "turn_start", "turn": turn, "agent": ""}, model_call(call_id, turn),
            {"type": "tool_result", "id": f"t{turn}", "name": "lookup", "content": "v",
             "is_error": False, "duration": 0.01, "content_chars": 1}]


def v6_database(path: Path) -> None:
    """A file as the v6 schema wrote it (its own row forms): two turns of session `old`, each
    one events row with the model call slim and the whole record in `model_calls`, and a
    second session with a call of its own."""
    db = schema_file(path, 6)
    for session in ("old", "other"):
        db.execute("INSERT INTO sessions (id, created, updated) VALUES (?, 0, 0)", (session,))
    writes = [("old", "c1", 1), ("other", "x1", 1), ("old", "c2", 2)]
    for session, call_id, turn in writes:
        split = [split_model_call("r1", event) for event in turn_events(call_id, turn)]
        db.execute("INSERT INTO events (session_id, run_id, created, type, data) VALUES "
                   "(?, 'r1', ?, 'batch', ?)",
                   (session, float(turn), record_json([event for event, _ in split])))
        db.executemany(f"INSERT INTO model_calls (session_id, {', '.join(CALL_COLUMNS)}) VALUES "
                       f"({', '.join('?' * (len(CALL_COLUMNS) + 1))})",
                       [(session, *row) for _, row in split if row is not None])
    db.commit()
    db.close()


def slim(events: list[dict[str, Any]], created: float) -> list[dict[str, Any]]:
    """The events as the log gives them back (v6 and v7 alike)."""
    return [{**split_model_call("r1", event)[0], "run_id": "r1", "created": created}
            for event in events]


def test_a_v6_database_migrates_with_every_event_and_model_call_in_order(
        tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    v6_database(path)
    with SQLiteStore(path) as store:
        assert store.events("old") == [*slim(turn_events("c1", 1), 1.0),
                                       *slim(turn_events("c2", 2), 2.0)]
        # each old call once: from its moved row, never again from its slim event
        assert [(r.id, r.request, r.response) for r in store.model_calls("old")] == [
            ("c1", {"messages": 1, "tools": ["lookup"]}, {"content": "reply 1",
                                                          "tool_calls": []}),
            ("c2", {"messages": 2, "tools": ["lookup"]}, {"content": "reply 2",
                                                          "tool_calls": []})]
        assert [r.id for r in store.model_calls("other")] == ["x1"]
        store.record_events("old", "r1", turn_events("c3", 3))  # recorded on, the v7 way
        calls = store.model_calls("old")
        assert [r.id for r in calls] == ["c1", "c2", "c3"]
        assert calls[2].request == {"messages": 3, "tools": ["lookup"]}
        assert calls[2].usage.input_tokens == 30
        logged = [e for e in store.events("old") if e["type"] == "model_call"]
        assert [e["record"]["id"] for e in logged] == ["c1", "c2", "c3"]
        assert all("request" not in e["record"] and "response" not in e["record"]
                   for e in logged)
        store.delete("old")
        assert store.model_calls("old") == [] and store.events("old") == []
        assert [r.id for r in store.model_calls("other")] == ["x1"]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_a_turn_writes_its_model_call_once_in_the_events_row(tmp_path: Path) -> None:
    """No `model_calls` table or index, on a new file and on a migrated one alike; the events
    row holds the whole record."""
    v6_database(tmp_path / "v6.db")
    for path in (tmp_path / "new.db", tmp_path / "v6.db"):
        with SQLiteStore(path) as store:
            store.create("s")
            store.record_events("s", "r1", turn_events("c9", 9))
        db = sqlite3.connect(path)
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master")]
        assert not [name for name in names if "model_calls" in name], names
        (data,) = db.execute("SELECT data FROM events WHERE session_id = 's'").fetchone()
        assert json.loads(data)[1]["record"]["response"] == {"content": "reply 9",
                                                            "tool_calls": []}
        db.close()


def test_a_model_call_event_alone_in_its_row_is_a_call_too(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s")
        store.record_events("s", "r1", [model_call("c1", 1)])
        store.record_events("s", "r1", [{"type": "turn_start", "turn": 2, "agent": ""}])
        assert [r.id for r in store.model_calls("s")] == ["c1"]
        assert [e["type"] for e in store.events("s")] == ["model_call", "turn_start"]
        assert "request" not in store.events("s")[0]["record"]


def test_a_damaged_row_is_a_session_error_for_model_calls_too(tmp_path: Path) -> None:
    """A cut events row, a moved record cut short, a record of the wrong shape: each a
    `SessionError` naming the session, never a raw decoding error (each row keyed as the
    first of the file's first session: schema v9)."""
    cases = ["INSERT INTO events (id, session_id, run_id, created, type, data) VALUES "
             "((1 << 32) + 1, 's', 'r1', 1, 'batch', '[{\"type\": \"model_call\", \"rec')",
             "INSERT INTO events (id, session_id, run_id, created, type, data) VALUES "
             "((1 << 32) + 1, 's', 'r1', 1, 'call_record', '{\"id\": \"c1\", \"usa')",
             "INSERT INTO events (id, session_id, run_id, created, type, data) VALUES "
             "((1 << 32) + 1, 's', 'r1', 1, 'model_call', '{\"type\": \"model_call\", "
             "\"record\": "
             "{\"request\": {}, \"usage\": {\"tokens_of_no_kind\": 1}}}')"]
    for number, sql in enumerate(cases):
        with SQLiteStore(tmp_path / f"{number}.db") as store:
            store.create("s")
            store._db.execute(sql)
            try:
                store.model_calls("s")
            except SessionError as exc:
                assert "session s" in str(exc) and "damaged" in str(exc)
            else:
                raise AssertionError(f"case {number}: no error")
