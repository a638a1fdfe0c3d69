"""Every model call's record is stored: SQLite and PostgreSQL keep each run's `ModelCallRecord`s
(request, response, latency, attempts, usage, cost; PostgreSQL in `model_calls`, SQLite in the
event's own row since schema v7), the event log gives the `model_call` events back without their
bulky parts, and an existing SQLite file is migrated."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ModelCallEvent
from loopwright.grading import GRADER_PROMPT
from loopwright.store import open_store
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call
from pg_server import fresh_database
from shared_helpers import schema_file

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def handler_with_a_retry() -> Any:
    script: list[ScriptItem] = [Fault.overloaded(), Reply(tool_calls=[call("add", {"a": 2,
                                                                                   "b": 3})]),
                                Reply("It is 5.")]

    def answer(request: RecordedRequest) -> ScriptItem:
        if request.body["messages"][0]["content"] == GRADER_PROMPT:
            return Reply('{"verdict": "satisfied", "feedback": "ok"}')
        return script.pop(0)

    return answer


async def test_each_runs_model_calls_are_stored_with_request_and_response(
        store_spec: str) -> None:
    events: list[Event] = []
    with FakeModelServer(handler=handler_with_a_retry()) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", tools=[add],
                      retry=FAST, store=store_spec, rubric="Say the sum.",
                      callbacks=[events.append], stream=False)
        result = await agent.run("2+3?")
        await agent.aclose()
    assert result.stop_reason == "completed" and result.session_id
    emitted = [e.record for e in events if isinstance(e, ModelCallEvent)]
    store = open_store(store_spec)
    assert store is not None
    try:
        stored = await store.model_calls(result.session_id)  # type: ignore[attr-defined]
        logged = await store.events(result.session_id)  # type: ignore[attr-defined]
    finally:
        await store.aclose()
    assert [r.purpose for r in stored] == ["turn", "turn", "grading"]
    assert stored == emitted
    assert stored[0].attempts == 2 and stored[0].response is not None
    assert stored[0].response["tool_calls"][0]["name"] == "add"
    assert stored[1].request["last_message"]["role"] == "tool"
    assert sum(r.usage.requests for r in stored) == result.usage.requests
    rows = [e for e in logged if e["type"] == "model_call"]
    assert [row["record"]["id"] for row in rows] == [r.id for r in stored]
    assert all("request" not in row["record"] and "response" not in row["record"]
               for row in rows)


def test_a_version_2_file_keeps_its_sessions_and_stores_model_calls(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = schema_file(path, 2)
    db.execute("INSERT INTO sessions (id, created, updated) VALUES ('kept', 1.0, 1.0)")
    db.commit()
    db.close()
    store = SQLiteStore(path)
    try:
        assert store.get("kept") is not None
        row = {"type": "model_call", "record": {
            "id": "c1", "purpose": "turn", "run_id": "r1", "session_id": "kept", "agent": "",
            "turn": 1, "model": "m", "provider": "p", "endpoint": "http://x/v1",
            "mode": "chat_completions", "started": 2.0, "latency": 0.5, "attempts": 1,
            "streamed": False, "request": {"messages": 1}, "response": {"content": "hi"},
            "usage": {"input_tokens": 3, "output_tokens": 1, "requests": 1}, "cost": None,
            "error": None, "status": None}}
        store.record_events("kept", "r1", [row])
        (record,) = store.model_calls("kept")
        assert record.response == {"content": "hi"} and record.usage.input_tokens == 3
    finally:
        store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    (data,) = db.execute("SELECT data FROM events WHERE type = 'model_call'").fetchone()
    assert json.loads(data)["record"]["request"] == {"messages": 1}  # the record whole, once


async def test_a_version_1_postgres_database_gets_the_model_calls_table(
        postgres_server: str) -> None:
    import psycopg

    from loopwright.store.postgres import PostgresStore
    from loopwright.store.postgres_schema import MIGRATIONS as PG_MIGRATIONS

    dsn = fresh_database(postgres_server)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(PG_MIGRATIONS[0].encode())
        conn.execute("CREATE TABLE loopwright_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO loopwright_schema VALUES (1)")
        conn.execute("INSERT INTO sessions (id, created, updated) VALUES ('kept', 1, 1)")
    store = PostgresStore(dsn)
    try:
        assert await store.get("kept") is not None
        assert await store.model_calls("kept") == []
    finally:
        await store.aclose()
    with psycopg.connect(dsn) as conn:
        version = conn.execute("SELECT version FROM loopwright_schema").fetchone()
        assert version == (len(PG_MIGRATIONS),)
