"""The event log costs one row per transaction: the events a run queued together (a turn's) are
one row, a JSON array, read back as the events they were, in order; rows written one event
each (as every store before issue 30 item 5 did) still read as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from loopwright import Agent, tool
from loopwright.errors import SessionError
from loopwright.events import Event
from loopwright.store import open_store
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_turn_is_one_event_row_and_reads_back_as_every_event_in_order(
        store_spec: str) -> None:
    seen: list[Event] = []
    script = [Reply(tool_calls=[call("lookup", {"key": f"k{n}"})]) for n in range(4)]
    with FakeModelServer([*script, Reply("done")]) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      tools=[lookup], session_id="batched", callbacks=[seen.append])
        result = await agent.run("go")
        await agent.aclose()
    assert result.stop_reason == "completed"
    store = open_store(store_spec)
    assert store is not None
    try:
        stored = await store.events("batched")
    finally:
        await store.aclose()
    kept = [e for e in seen if e.type not in ("text_delta", "reasoning_delta", "done")]
    assert [e["type"] for e in stored if e["type"] != "done"] == [e.type for e in kept]
    calls = [e for e in stored if e["type"] == "tool_call"]
    assert [json.loads(e["arguments"])["key"] if isinstance(e["arguments"], str)
            else e["arguments"]["key"] for e in calls] == ["k0", "k1", "k2", "k3"]
    assert len({e["run_id"] for e in stored}) == 1 and all(e["created"] > 0 for e in stored)
    if not store_spec.startswith("postgresql"):
        rows = sqlite3.connect(store_spec).execute(
            "SELECT count(*) FROM events WHERE session_id = 'batched'").fetchone()[0]
        assert rows < len(stored) / 3  # five events a turn, one row
        columns = sqlite3.connect(store_spec).execute(
            "SELECT DISTINCT type, call_id, name, is_error, duration, size FROM events "
            "WHERE session_id = 'batched' AND type = 'batch'").fetchall()
        assert columns == [("batch", None, None, None, None, None)]  # a batch has no tool


def old_row(store: SQLiteStore, session_id: str, event: dict[str, Any]) -> None:
    """An event row as stores before batched rows wrote it: one event, one object (keyed
    next in the session's keys, as schema v9 moved such rows)."""
    store._db.execute(
        "INSERT INTO events (id, session_id, run_id, created, type, data) VALUES ("
        "(SELECT coalesce(max(e.id), s.num << 32) + 1 FROM sessions s LEFT JOIN events e "
        "ON e.id BETWEEN s.num << 32 AND (s.num << 32) + 4294967295 WHERE s.id = ?1), "
        "?1, 'r0', 1.0, ?2, ?3)", (session_id, event["type"], json.dumps(event)))


def test_rows_of_one_event_each_and_batched_rows_read_back_in_order(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("mixed")
        old_row(store, "mixed", {"type": "turn_start", "turn": 1})
        old_row(store, "mixed", {"type": "tool_call", "id": "c1", "name": "lookup"})
        store.record_events("mixed", "r1", [{"type": "turn_start", "turn": 2},
                                            {"type": "tool_call", "id": "c2", "name": "x"}])
        store.record_events("mixed", "r1", [{"type": "done"}])
        events = store.events("mixed")
    assert [(e["type"], e["run_id"]) for e in events] == [
        ("turn_start", "r0"), ("tool_call", "r0"), ("turn_start", "r1"), ("tool_call", "r1"),
        ("done", "r1")]
    assert [e.get("id") for e in events] == [None, "c1", None, "c2", None]


def test_a_batch_without_events_writes_no_event_row(tmp_path: Path) -> None:
    from loopwright.store.writes import RecordEvents

    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("quiet")
        store.write_batch("quiet", [RecordEvents(run_id="r1", events=[])])
        assert store._db.execute("SELECT count(*) FROM events").fetchone()[0] == 0
        assert store.events("quiet") == []


def test_a_batched_row_with_a_foreign_element_is_a_session_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("odd")
        store.record_events("odd", "r1", [{"type": "turn_start"}, {"type": "done"}])
        store._db.execute("UPDATE events SET data = '[{\"type\": \"done\"}, 7]'")
        with pytest.raises(SessionError, match="odd"):
            store.events("odd")



async def test_a_write_batch_keeps_order_numbering_and_every_record(store_spec: str) -> None:
    """A batch as a turn writes it (PostgreSQL: one statement): messages numbered on from the
    ones stored, events in order, every model call, the run and the turn."""
    from loopwright.messages import ToolCall, Usage, assistant, tool_result, user
    from loopwright.store import RunRecord
    from loopwright.store.writes import AppendMessages, RecordEvents, RecordRun, RecordTurn

    store = open_store(store_spec)
    assert store is not None
    write_batch = cast(Any, store).write_batch  # not part of the SessionStore protocol
    try:
        await store.create("b1")
        await store.append_many("b1", [user("first")])
        calls = [{"type": "model_call", "record": {
            "id": f"m{n}", "turn": 1, "purpose": "turn", "model": "x", "request": {},
            "response": {}, "usage": {"input_tokens": n}, "run_id": "r1", "session_id": "b1",
            "agent": "", "provider": "p", "endpoint": "e", "mode": "m", "started": 1.0,
            "latency": 0.1, "attempts": 1, "streamed": False}} for n in (1, 2)]
        for turn in (1, 2):
            made = ToolCall(id=f"c{turn}", name="lookup", arguments="{}")
            await write_batch("b1", [
                RecordEvents(run_id="r1", events=[{"type": "turn_start", "turn": turn}]),
                AppendMessages(messages=[assistant("", tool_calls=[made])]),
                RecordEvents(run_id="r1", events=calls if turn == 1 else []),
                AppendMessages(messages=[tool_result(made, f"result {turn}")]),
                RecordRun(record=RunRecord(run_id="r1", turns=turn, usage=Usage(requests=turn))),
                RecordTurn(run_id="r1", turn=turn, usage=Usage(requests=1), cost=None),
                RecordEvents(run_id="r1", events=[{"type": "turn_end", "turn": turn,
                                                   "usage": {"requests": 1}}])])
        history = await store.load("b1")
        events = await store.events("b1")
        records = await store.model_calls("b1")
        runs = await store.runs("b1")
        turns = await store.turns("b1")
    finally:
        await store.aclose()
    assert [m.content for m in history] == ["first", "", "result 1", "", "result 2"]
    assert [(e["type"], e.get("turn")) for e in events] == [
        ("turn_start", 1), ("model_call", None), ("model_call", None), ("turn_end", 1),
        ("turn_start", 2), ("turn_end", 2)]
    assert [r.id for r in records] == ["m1", "m2"]
    # the run has not ended: its totals so far are its turns' (store/turns.py)
    assert [(r["turns"], r["requests"]) for r in runs] == [(2, 2)]
    assert [t["turn"] for t in turns] == [1, 2]


def test_each_event_type_is_queued_as_its_stored_row() -> None:
    """The recorder's short way for most of a turn's events (their JSON form as it is) gives
    the row its one rule (`_row`) gives, for every type it takes that way."""
    from loopwright import events as ev
    from loopwright.store.recorder import _AS_IS, SessionRecorder

    class Run:
        run_id, agent_tag = "r1", ""

    recorder = SessionRecorder(cast(Any, None), "s1")
    recorder._run = cast(Any, Run())
    recorder._writes.open = True
    events: list[Event] = [
        ev.TurnStart(turn=1), ev.ToolCallEvent(id="c", name="n", arguments={"k": 1}),
        ev.StatusEvent(kind="custom", message="m", data={"d": 1}, agent="delegate:1"),
        ev.ReviewEvent(check="k", verdict="stop"), ev.PartialOutput(output="o"),
        ev.ModelCallEvent(record=ev.ModelCallRecord(
            id="c1", purpose="turn", run_id="r1", session_id="s1", agent="", turn=1,
            model="m", provider="p", endpoint="e", mode="chat", started=1.0, latency=0.5,
            attempts=1, streamed=False, request={}, response=None)),
        ev.ToolResultEvent(id="c", name="n", content="x" * 600), ev.TurnEnd(turn=1)]
    assert {e.type for e in events} >= _AS_IS
    for event in events:
        recorder(event)
        assert recorder._writes._events[-1] == recorder._row(event), event.type
    assert recorder._writes._events[-2]["preview"] == "x" * 500  # not as is: its preview
