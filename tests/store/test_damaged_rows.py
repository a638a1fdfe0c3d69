"""A damaged row (a message whose JSON was cut, an event that is not JSON) gives a `SessionError`
naming the session and what to do — in the library and in `loopwright sessions` — never a raw
exception or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright import Agent
from loopwright.errors import SessionError
from loopwright.messages import ToolCall, assistant, user
from loopwright.store import open_store
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer

CUT = '{"tool_calls":[{"id":"c1","name":"add","argu'  # a row written half-way


async def damaged_session(store_spec: str, session_id: str) -> None:
    """A stored session whose second message row holds cut JSON."""
    store = open_store(store_spec)
    assert store is not None
    try:
        await store.create(session_id, title="damaged")
        await store.append_many(session_id, [
            user("add 2 and 3"),
            assistant("", tool_calls=[ToolCall(id="c1", name="add", arguments="{}")])])
    finally:
        await store.aclose()
    sql = "UPDATE messages SET data = %s WHERE session_id = %s AND seq = 2"
    if store_spec.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_spec, autocommit=True) as conn:
            conn.execute(sql, (CUT, session_id))
    else:
        import sqlite3

        with sqlite3.connect(store_spec) as db:
            db.execute(sql.replace("%s", "?"), (CUT, session_id))


async def test_resuming_a_session_with_a_cut_message_row_is_a_session_error(
        store_spec: str) -> None:
    await damaged_session(store_spec, "cut-row")
    with FakeModelServer([]) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      session_id="cut-row")
        with pytest.raises(SessionError) as raised:
            await agent.run("")
        assert server.model_requests == []
    text = str(raised.value)
    assert "cut-row" in text and "message 2" in text
    assert "new session" in text  # what to do about it


async def test_a_damaged_event_row_is_a_session_error_naming_the_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        store.create("bad-event")
        store.record_events("bad-event", "r1", [{"type": "status", "message": "hi"}])
        store._db.execute("UPDATE events SET data = '{\"type\": \"sta' WHERE session_id = "
                          "'bad-event'")
        with pytest.raises(SessionError, match="bad-event"):
            store.events("bad-event")


def sessions_cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    from loopwright.cli.main import app

    env: dict[str, str | None] = {key: None for key in os.environ
                                  if key.startswith(("LOOPWRIGHT_", "XDG_"))}
    env["LOOPWRIGHT_DATA_DIR"] = str(tmp_path / "data")
    result = CliRunner().invoke(app, ["sessions", *args], env=env)
    return result.exit_code, result.output + (str(result.exception or ""))


async def test_sessions_show_of_a_damaged_row_prints_a_clear_error_and_no_traceback(
        tmp_path: Path) -> None:
    db = tmp_path / "data" / "sessions.db"
    db.parent.mkdir()
    await damaged_session(str(db), "cut-show")
    code, output = sessions_cli(tmp_path, "show", "cut-show")
    assert code == 1, output
    assert "cut-show" in output and "message 2" in output
    assert "Traceback" not in output and "JSONDecodeError" not in output
