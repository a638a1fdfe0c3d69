"""The session suite, run against SQLite and a real PostgreSQL server alike (`store_spec`).

Stable identity through compaction (issue 13 item 1), sub-agent links and per-turn cost (item 10)
and the store protocol itself, through `Agent(store=...)` and `open_store`.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.context.summary import SUMMARY_HEADER, SUMMARY_SYSTEM
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import SessionError
from loopwright.interrupted import INTERRUPTED_RESULT, close_interrupted_calls
from loopwright.messages import (
    Message,
    assistant,
    sanitize,
    system,
    user,
)
from loopwright.store import SessionStore, open_store
from loopwright.testing import (
    FakeModelServer,
    RecordedRequest,
    Reply,
    ScriptedUsage,
    ScriptItem,
    call,
)
from shared_helpers import schema_file

FAST = RetryPolicy(base_delay=0.01, jitter=0)
TASK = "Collect every part and report how many there were."


@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\n" for n in range(60))


def compacting_handler(parts: int = 12, then: list[ScriptItem] | None = None
                       ) -> Callable[[RecordedRequest], ScriptItem]:
    """`parts` calls to `dump` (enough to compact a 4096-token window), then `then`."""
    queue: list[ScriptItem] = [Reply(tool_calls=[call("dump", {"part": n})])
                               for n in range(parts)]
    queue += then if then is not None else [Reply(f"{parts} parts")]

    def answer(request: RecordedRequest) -> ScriptItem:
        if request.body["messages"][0]["content"] == SUMMARY_SYSTEM:
            return Reply("## Goal\nCollect the parts.\n## Done\nSome parts.")
        return queue.pop(0) if queue else Reply("(script ended)")

    return answer


def shape(history: list[Any]) -> list[tuple[Any, ...]]:
    """What must survive storage exactly: roles, call ids and result ids (pruning stubs
    replace old tool output in memory only)."""
    out = []
    for m in history:
        if isinstance(m, Message):
            out.append((m.role, m.tool_call_id, tuple(c.id for c in m.tool_calls)))
        else:
            out.append((m["role"], m.get("tool_call_id"),
                        tuple(c["id"] for c in m.get("tool_calls") or [])))
    return out


def opened(spec: str) -> SessionStore:
    store = open_store(spec)
    assert store is not None
    return store


async def test_messages_round_trip_and_compaction_keeps_the_lineage(store_spec: str) -> None:
    store = opened(store_spec)
    await store.create("s1", title="first", model="m")
    await store.append("s1", user("hello"))
    await store.append_many("s1", [assistant("hi"), user("more")])
    assert [m.content for m in await store.load("s1")] == ["hello", "hi", "more"]
    assert await store.compact("s1", [user("hello"), user("summary")]) == 1
    await store.append("s1", assistant("after"))
    assert [m.content for m in await store.load("s1")] == ["hello", "summary", "after"]
    info = await store.get("s1")
    assert info is not None and (info.epoch, info.message_count, info.title) == (1, 3, "first")
    lineage = await store.lineage("s1")  # type: ignore[attr-defined]
    assert [(e.epoch, e.messages) for e in lineage] == [(0, 3), (1, 3)]
    await store.aclose()


async def test_a_lease_keeps_a_second_writer_off_the_session(store_spec: str) -> None:
    store = opened(store_spec)
    await store.create("s1")
    await store.acquire("s1", "worker-a")
    with pytest.raises(SessionError, match="in use by another run"):
        await store.acquire("s1", "worker-b")
    await store.renew("s1", "worker-a")
    with pytest.raises(SessionError, match="lost its lease"):
        await store.renew("s1", "worker-b")
    await store.release("s1", "worker-a")
    await store.acquire("s1", "worker-b")  # free once released
    await store.aclose()


def set_lease(spec: str, session_id: str, *, host: str, expires_in: float) -> None:
    """Write a lease as a run on another machine would have left it (raw SQL, per backend)."""
    sql = ("UPDATE sessions SET lock_owner = 'elsewhere:1:abc', lock_pid = 1, lock_host = {p}, "
           "lock_expires = {p} WHERE id = {p}")
    values = (host, time.time() + expires_in, session_id)
    if spec.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute(sql.format(p="%s"), values)
    else:
        with sqlite3.connect(spec) as conn:
            conn.execute(sql.format(p="?"), values)


async def test_another_machines_lease_holds_until_it_expires(store_spec: str) -> None:
    store = opened(store_spec)
    await store.create("s1")
    await store.release("s1", "nobody")  # connects (and creates the schema) first
    set_lease(store_spec, "s1", host="another-machine", expires_in=60)
    with pytest.raises(SessionError, match=r"in use by another run .*on another-machine"):
        await store.acquire("s1", "worker-here")
    info = await store.get("s1")
    assert info is not None and info.locked_by == 1
    set_lease(store_spec, "s1", host="another-machine", expires_in=-1)  # that worker died
    await store.acquire("s1", "worker-here")
    await store.aclose()


async def test_search_finds_stemmed_words_and_never_breaks_on_syntax(store_spec: str) -> None:
    store = opened(store_spec)
    await store.create("a1", title="deploy")
    await store.create("b2", title="other")
    await store.append("a1", user("How do I deploy the billing service to staging?"))
    await store.append("a1", assistant("Run the deploy script with --env staging."))
    await store.append("b2", user("Unrelated question about parsers"))
    search = store.search  # type: ignore[attr-defined]
    hits = await search("deploying staging")
    assert {h.session_id for h in hits} == {"a1"} and len(hits) == 2
    assert "\x02staging\x03" in hits[0].snippet.lower()
    assert await search("staging", exclude_session="a1") == []
    assert await search('"unbalanced (quote AND | !') == []
    assert {h.session_id for h in await search("parsers staging", any_word=True)} == {"a1", "b2"}
    await store.aclose()


async def test_a_compacted_session_keeps_its_id_and_resumes_its_newest_state(
        store_spec: str, tmp_path: Path) -> None:
    """Issue 13 replay: run 1 compacts; run 2 with the same id starts WITH run 1's answer and
    every turn after the compaction (it used to continue a stale pre-compaction copy)."""
    common: dict[str, Any] = {"api_key": "k", "tools": [dump], "retry": FAST,
                              "cache_dir": str(tmp_path), "workdir": str(tmp_path),
                              "store": store_spec, "session_id": "user-123"}
    # 20 parts: the compact prompt of a small local window (issue 28) leaves room for more
    handler = compacting_handler(parts=20, then=[Reply("12 parts"), Reply("There were 12.")])
    with FakeModelServer(handler=handler) as server:
        first = await Agent("m", base_url=server.base_url, context_window=4096,
                            **common).run(TASK)
        assert first.stop_reason == "completed" and first.session_id == "user-123"
        assert any(m.content.startswith(SUMMARY_HEADER) for m in first.messages)
        before = len(server.model_requests)
        second = await Agent("m", base_url=server.base_url, context_window=100_000,
                             **common).run("How many parts were there?")
        sent = server.model_requests[before].body["messages"]
    assert second.session_id == "user-123" and second.output == "There were 12."
    expected = sanitize([*first.messages, user("How many parts were there?")])
    assert shape(sent) == shape(expected)  # every turn after the compaction, in order
    assert SUMMARY_HEADER in sent[1]["content"]
    assert sent[-2]["content"] == "12 parts"  # run 1's answer
    store = opened(store_spec)
    lineage = await store.lineage("user-123")  # type: ignore[attr-defined]
    assert len(lineage) >= 2  # the pre-compaction record is kept as history
    sessions = await store.list_sessions()
    assert [s.id for s in sessions] == ["user-123"]  # no id to chase
    info = sessions[0]
    assert info.usage.requests == first.usage.requests + second.usage.requests
    await store.aclose()


CHILD = '''
import asyncio, sys, time
from pathlib import Path
from loopwright import Agent, tool

base_url, spec, marker, cache = sys.argv[1:5]

@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\\n" for n in range(60))

@tool
def slow_step(seconds: float) -> str:
    """Take a while."""
    Path(marker).write_text("started")
    time.sleep(seconds)
    return "slow step done"

agent = Agent("m", base_url=base_url, api_key="k", store=spec, session_id="user-123",
              tools=[dump, slow_step], context_window=4096, cache_dir=cache, workdir=cache)
asyncio.run(agent.run("Collect every part and report how many there were."))
'''


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
async def test_kill_9_after_a_compaction_resumes_the_users_id_without_forking(
        store_spec: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    slow = [Reply(tool_calls=[call("slow_step", {"seconds": 60})]), Reply("resumed and done")]
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    with FakeModelServer(handler=compacting_handler(then=slow)) as server:
        child = subprocess.Popen([sys.executable, str(script), server.base_url, store_spec,
                                  str(marker), str(tmp_path)], stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not marker.exists():
                if child.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the child did not reach the slow step: "
                                f"{child.stderr.read() if child.stderr else ''}")
                time.sleep(0.02)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
        store = opened(store_spec)
        stored = await store.load("user-123")
        assert any(m.content.startswith(SUMMARY_HEADER) for m in stored)  # compacted epoch
        assert stored[-1].tool_calls and stored[-1].tool_calls[0].name == "slow_step"
        before = len(server.model_requests)
        result = await Agent("m", base_url=server.base_url, api_key="k", store=store_spec,
                             session_id="user-123", tools=[dump], retry=FAST,
                             context_window=100_000, cache_dir=str(tmp_path),
                             workdir=str(tmp_path)).run("")
        sent = server.model_requests[before].body["messages"]
    assert result.session_id == "user-123" and result.output == "resumed and done"
    resumed = sanitize([system("x"), *close_interrupted_calls(stored)])
    assert shape(sent) == shape(resumed)  # the compacted epoch, up to the last stored message
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == INTERRUPTED_RESULT
    assert [s.id for s in await store.list_sessions()] == ["user-123"]  # no second child
    await store.aclose()


def delegating_handler() -> Callable[[RecordedRequest], ScriptItem]:
    usage = ScriptedUsage(input_tokens=1000, output_tokens=100)

    def answer(request: RecordedRequest) -> ScriptItem:
        body = request.body["messages"]
        steps = sum(1 for m in body if m["role"] == "assistant")
        if CHILD_PROMPT.splitlines()[0] in body[0]["content"]:
            return Reply("the child found 5", usage=usage)
        if steps == 0:
            return Reply(tool_calls=[call("delegate", {"task": "find the number"})], usage=usage)
        return Reply("the answer is 5", usage=usage)

    return answer


async def test_a_sub_agents_session_is_linked_to_its_parent_and_turn_costs_are_stored(
        store_spec: str, tmp_path: Path) -> None:
    with FakeModelServer(handler=delegating_handler()) as server:
        result = await Agent("gpt-4o-mini", base_url=server.base_url, api_key="k",
                             tools=[make_delegate_tool()], retry=FAST, store=store_spec,
                             session_id="parent-1", workdir=str(tmp_path)).run("delegate it")
    assert result.output == "the answer is 5" and result.cost
    store = opened(store_spec)
    children = await store.children("parent-1")  # type: ignore[attr-defined]
    assert [c.parent_id for c in children] == ["parent-1"]
    child_messages = await store.load(children[0].id)
    assert [m.content for m in child_messages] == ["find the number", "the child found 5"]
    turns = await store.turns("parent-1")  # type: ignore[attr-defined]
    assert [t["turn"] for t in turns] == [1, 2]
    assert all(t["cost"] and t["cost"] > 0 for t in turns)
    assert sum(t["cost"] for t in turns) == pytest.approx(result.cost)  # child's cost inside
    assert [t["input_tokens"] for t in turns] == [2000, 1000]  # turn 1 ran the sub-agent
    await store.aclose()



async def test_a_session_stores_its_provider_but_never_the_key(store_spec: str) -> None:
    with FakeModelServer([Reply("hi")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="sk-secret-key",
                      api_mode="chat_completions", store=store_spec, session_id="p1")
        assert (await agent.run("hello")).output == "hi"
        await agent.aclose()
        url = server.base_url
    store = opened(store_spec)
    info = await store.get("p1")
    assert info is not None
    assert (info.model, info.base_url, info.api_mode) == ("fake-model", url, "chat_completions")
    assert "sk-secret-key" not in repr(info.to_dict())
    await store.aclose()


def test_a_version_2_database_migrates_and_keeps_its_sessions(tmp_path: Path) -> None:
    from loopwright.store.sqlite import SQLiteStore

    path = tmp_path / "old.db"
    db = schema_file(path, 2)
    db.execute("INSERT INTO sessions (id, title, model, cwd, created, updated) "
               "VALUES ('old1', 't', 'm', '/', 0, 0)")
    db.commit()
    db.close()
    with SQLiteStore(path) as store:
        info = store.get("old1")
    assert info is not None and (info.model, info.base_url, info.api_mode) == ("m", "", "")


async def test_opening_a_session_creates_it_once_and_respects_a_live_lease(
        store_spec: str) -> None:
    store: Any = opened(store_spec)
    assert await store.open_session("s1", "worker-a", title="first", base_url="u1",
                                    api_mode="responses") is False  # new
    with pytest.raises(SessionError, match="in use by another run"):
        await store.open_session("s1", "worker-b", title="second", base_url="u2")
    info = await store.get("s1")
    assert info is not None
    assert (info.title, info.base_url, info.api_mode, info.locked_by) == (
        "first", "u1", "responses", os.getpid())
    assert await store.open_session("s1", "worker-a", title="ignored") is True  # existed
    await store.release("s1", "worker-a")
    assert await store.open_session("s1", "worker-b") is True  # free once released
    await store.aclose()


async def test_a_lease_given_back_with_a_write_is_only_the_writers_own(store_spec: str) -> None:
    from loopwright.store.writes import AppendMessages, ReleaseLease

    store: Any = opened(store_spec)
    await store.open_session("s1", "worker-a")
    await store.write_batch("s1", [AppendMessages(messages=[user("hi")]),
                                   ReleaseLease(owner="worker-b")])  # not b's to give back
    info = await store.get("s1")
    assert info is not None and info.locked_by == os.getpid()
    with pytest.raises(SessionError, match="in use by another run"):
        await store.open_session("s1", "worker-b")
    await store.write_batch("s1", [AppendMessages(messages=[user("bye")]),
                                   ReleaseLease(owner="worker-a")])
    info = await store.get("s1")
    assert info is not None and info.locked_by is None and info.message_count == 2
    assert await store.open_session("s1", "worker-b") is True  # free once given back
    await store.aclose()
