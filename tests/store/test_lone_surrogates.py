"""A provider may send a lone surrogate (`"\\ud800"`) in a reply's text or a tool call's
arguments: the run goes on, and the session stores and reads the text back as it was, in
SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.store import SessionStore, open_store
from raw_provider import raw_stream
from shared_helpers import cli_env

# a tool call whose arguments hold a lone surrogate, written as the text delta's neighbour
CALL = (rb'null,"tool_calls":[{"index":0,"id":"c1","type":"function","function":'
        rb'{"name":"echo","arguments":"{\"text\":\"tool \ud800\"}"}}]')


@tool(read_only=True)
def echo(text: str) -> str:
    """Say `text` back."""
    return f"echo: {text}"


async def _run(store_spec: str, *contents: bytes, **settings: Any) -> tuple[Any, list[Any]]:
    with raw_stream(*contents) as base_url:
        agent = Agent("m", base_url=base_url, api_key="k", store=store_spec, tools=[echo],
                      **settings)
        events = [event async for event in agent.stream("hi")]
    return events[-1].result, [e for e in events if e.type == "status"]


async def _stored(store_spec: str, session_id: str) -> tuple[list[Any], list[dict[str, Any]]]:
    store: SessionStore | None = open_store(store_spec)
    assert store is not None
    try:
        return await store.load(session_id), await store.events(session_id)  # type: ignore[attr-defined]
    finally:
        await store.aclose()


async def test_a_reply_with_a_lone_surrogate_is_stored_and_read_back(store_spec: str) -> None:
    result, statuses = await _run(store_spec, rb'"lone \ud800 csi \u009b2J"')
    assert result.stop_reason == "completed"
    assert [s for s in statuses if s.kind == "store_error"] == []  # was "surrogates not allowed"
    messages, events = await _stored(store_spec, result.session_id)
    assert messages[-1].content == "lone \ud800 csi \x9b2J"
    (turn,) = [e for e in events if e["type"] == "turn_end"]
    assert turn["text"] == "lone \ud800 csi \x9b2J"


async def test_tool_call_arguments_with_a_lone_surrogate_are_stored_and_read_back(
        store_spec: str) -> None:
    # the server sends the call again on the next turn, which the turn limit leaves unrun
    result, statuses = await _run(store_spec, CALL, max_turns=2)
    assert [s for s in statuses if s.kind == "store_error"] == []
    messages, events = await _stored(store_spec, result.session_id)
    called = next(m for m in messages if m.tool_calls)
    assert called.tool_calls[0].arguments == '{"text":"tool \ud800"}'
    answered = next(m for m in messages if m.role == "tool")
    assert answered.content == "echo: tool \ud800"
    call_event = next(e for e in events if e["type"] == "tool_call")
    assert call_event["arguments"] == {"text": "tool \ud800"}


@pytest.mark.parametrize("text", ["plain ascii", "valid é — ✓ 😀 utf-8"])
async def test_text_without_a_surrogate_is_stored_as_it_is(store_spec: str, text: str) -> None:
    result, statuses = await _run(store_spec, json.dumps(text).encode())
    assert [s for s in statuses if s.kind == "store_error"] == []
    messages, _ = await _stored(store_spec, result.session_id)
    assert messages[-1].content == text


async def test_a_reply_with_nul_is_stored_and_read_back(store_spec: str) -> None:
    # PostgreSQL's text refused it: "text fields cannot contain NUL (0x00) bytes"
    result, statuses = await _run(store_spec, rb'"nul \u0000 end"')
    assert [s for s in statuses if s.kind == "store_error"] == []
    messages, _ = await _stored(store_spec, result.session_id)
    assert messages[-1].content == "nul \x00 end"


def test_the_cli_stores_such_a_reply_with_nothing_on_stderr(tmp_path: Path) -> None:
    # the run's terminal event, written late once the store had failed, failed again in a task
    # nobody awaited: "Task exception was never retrieved" and a traceback on stderr
    with raw_stream(rb'"lone \ud800 "') as base_url:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "Say it", "--model", "m", "--base-url",
             base_url, "--json"], cwd=tmp_path, env=cli_env(tmp_path), capture_output=True,
            timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    kinds = [json.loads(line).get("kind") for line in proc.stdout.splitlines()]
    assert "store_error" not in kinds


class _RefusingStore:
    """A store a user wrote on top of the SQLite one, whose events writes raise what they like
    (not a `LoopwrightError`)."""

    start_batch = write_batch = None  # one call per write: `record_events` among them
    opens_in_batch = False

    def __init__(self, inner: SessionStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def record_events(self, session_id: str, run_id: str,
                            events: list[dict[str, Any]]) -> None:
        raise ValueError("this store keeps no events")


async def test_a_store_failing_with_any_exception_leaves_no_task_unretrieved(
        tmp_path: Path) -> None:
    inner = open_store(tmp_path / "s.db")
    assert inner is not None
    unretrieved: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, found: unretrieved.append(found))
    with raw_stream(rb'"fine"') as base_url:
        agent = Agent("m", base_url=base_url, api_key="k", store=_RefusingStore(inner))
        events = [event async for event in agent.stream("hi")]
    for _ in range(5):  # the late write of the terminal event runs and ends
        await asyncio.sleep(0.01)
    gc.collect()
    await inner.aclose()
    assert any(e.type == "status" and e.kind == "store_error" for e in events)
    assert unretrieved == []  # was ValueError in "Task exception was never retrieved"


@pytest.mark.parametrize(("text", "column"), [
    ("plain ascii", "plain ascii"), ("valid é — ✓ 😀", "valid é — ✓ 😀"),
    ("lone \ud800 nul \x00", "lone \ufffd nul \ufffd")])
async def test_the_content_column_holds_the_text_and_the_exact_text_only_when_it_cannot(
        tmp_path: Path, text: str, column: str) -> None:
    await _run(str(tmp_path / "s.db"), json.dumps(text).encode())
    with sqlite3.connect(tmp_path / "s.db") as db:
        content, data = db.execute("SELECT content, data FROM messages WHERE role = "
                                   "'assistant'").fetchone()
    assert content == column  # what search and listings read
    assert ("content" in json.loads(data)) is (text != column)
    assert data.isascii() or text == column
