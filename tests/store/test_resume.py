"""Sessions through `Agent`: saved as they happen, resumed, repaired, exclusive, usage and cost."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import SessionError
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.messages import Message, ToolCall, user
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, ScriptedUsage, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent(server: FakeModelServer, db: Path, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [add])
    kwargs.setdefault("model", "test-model")
    kwargs.setdefault("store", db)
    return Agent(base_url=server.base_url, api_key="k", retry=FAST, **kwargs)


def sent_messages(server: FakeModelServer, n: int) -> list[dict[str, Any]]:
    body = server.model_requests[n].body
    assert body is not None
    return [{k: v for k, v in m.items() if k in ("role", "content", "tool_call_id")}
            for m in body["messages"] if m["role"] != "system"]


async def test_every_message_of_a_run_is_stored_in_order(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})], reasoning="add them"),
              Reply("It is 5.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, db).run("2+3?")
    assert result.stop_reason == "completed"
    with SQLiteStore(db) as store:
        assert store.load(result.session_id or "") == result.messages[1:]  # minus system
        info = store.get(result.session_id or "")
        assert info is not None
        assert (info.title, info.model, info.stop_reason, info.message_count) == (
            "2+3?", "test-model", "completed", 4)
        assert store.system_prompt(info.id) == result.messages[0].content


async def test_a_session_id_resumes_the_stored_conversation(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeModelServer([Reply("Hi Ada."), Reply("Your name is Ada.")]) as server:
        first = await make_agent(server, db).run("I am Ada.")
        second = await make_agent(server, db, session_id=first.session_id).run("Who am I?")
        assert sent_messages(server, 1) == [
            {"role": "user", "content": "I am Ada."},
            {"role": "assistant", "content": "Hi Ada."},
            {"role": "user", "content": "Who am I?"},
        ]
    assert second.session_id == first.session_id
    with SQLiteStore(db) as store:
        assert [m.content for m in store.load(first.session_id or "")] == [
            "I am Ada.", "Hi Ada.", "Who am I?", "Your name is Ada."]
        info = store.get(first.session_id or "")
        assert info is not None and info.runs == 2


def crashed_session(db: Path, session_id: str) -> None:
    """A session as a crash mid-tool leaves it: a call was stored, its result never was."""
    with SQLiteStore(db) as store:
        store.create(session_id, model="test-model", title="2+3?")
        store.append(session_id, user("2+3?"))
        store.append(session_id, Message(role="assistant", tool_calls=[
            ToolCall(id="call_9", name="add", arguments='{"a": 2, "b": 3}')]))


async def test_resume_repairs_calls_cut_off_by_a_crash_once(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    crashed_session(db, "s-crash")
    with FakeModelServer([Reply("Interrupted; it is 5."), Reply("Still 5.")]) as server:
        result = await make_agent(server, db, session_id="s-crash").run("")
        assert sent_messages(server, 0)[-1] == {
            "role": "tool", "content": INTERRUPTED_RESULT, "tool_call_id": "call_9"}
        await make_agent(server, db, session_id="s-crash").run("Sure?")
    assert result.stop_reason == "completed"
    with SQLiteStore(db) as store:
        roles = [m.role for m in store.load("s-crash")]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]


async def test_an_empty_prompt_continues_the_task(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeModelServer([Reply("Part one."), Reply("Part two.")]) as server:
        first = await make_agent(server, db).run("Write two parts.")
        await make_agent(server, db, session_id=first.session_id).run("")
        assert sent_messages(server, 1)[-1] == {"role": "user", "content": "Continue."}


async def test_a_second_run_on_a_live_session_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    script = [Reply("slow answer", delay=1.0), Reply("later")]
    with FakeModelServer(script) as server:
        owner = make_agent(server, db, session_id="shared")
        handle = await owner.start("first")
        intruder = make_agent(server, db, session_id="shared")
        with pytest.raises(SessionError, match=r"session shared is in use by another run \(pid"):
            await intruder.run("second")
        assert (await handle.task).output == "slow answer"
        assert (await intruder.run("second")).output == "later"  # free again once it ended
    with SQLiteStore(db) as store:
        assert [m.content for m in store.load("shared")] == [
            "first", "slow answer", "second", "later"]


async def test_in_memory_history_continues_without_duplicates(tmp_path: Path) -> None:
    """A caller carrying history between runs (as `loopwright chat` does) on one session."""
    db = tmp_path / "s.db"
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        agent = make_agent(server, db, session_id="chat")
        first = await agent.run("a")
        await agent.run("b", history=first.messages)
    with SQLiteStore(db) as store:
        assert [m.content for m in store.load("chat")] == ["a", "one", "b", "two"]


async def test_usage_and_cost_per_run_and_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    usage = ScriptedUsage(input_tokens=1000, output_tokens=100, cache_read_tokens=400)
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 1})], usage=usage),
              Reply("2", usage=usage), Reply("again", usage=usage)]
    with FakeModelServer(script) as server:
        first = await make_agent(server, db, model="gpt-4o-mini").run("1+1?")
        second = await make_agent(server, db, model="gpt-4o-mini",
                                  session_id=first.session_id).run("again")
    per_call = (600 * 0.15 + 400 * 0.075 + 100 * 0.60) / 1_000_000
    assert first.cost == pytest.approx(2 * per_call)
    assert second.cost == pytest.approx(per_call)
    assert first.usage.cache_read_tokens == 800
    with SQLiteStore(db) as store:
        info = store.get(first.session_id or "")
        assert info is not None
        assert info.cost == pytest.approx(3 * per_call)
        assert (info.usage.input_tokens, info.usage.output_tokens, info.usage.requests) == (
            3000, 300, 3)
        turns = [e["usage"] for e in store.events(info.id) if e["type"] == "turn_end"]
        assert [t["input_tokens"] for t in turns] == [1000, 1000, 1000]


async def test_cost_is_unknown_for_a_model_without_a_price(tmp_path: Path) -> None:
    with FakeModelServer([Reply("hi")]) as server:
        result = await make_agent(server, tmp_path / "s.db", model="my-local-model").run("hi")
    assert result.cost is None
    with SQLiteStore(tmp_path / "s.db") as store:
        info = store.get(result.session_id or "")
        assert info is not None and info.cost is None


async def test_the_audit_log_records_every_tool_call_and_its_decision(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 2}), call("nope", {})]),
              Reply(tool_calls=[call("add", {"a": 5, "b": 5})]), Reply("done")]
    with FakeModelServer(script) as server:
        agent = make_agent(server, db, policy={"add": {"deny": [r'"a":\s*5']}})
        result = await agent.run("go")
    with SQLiteStore(db) as store:
        audit = store.audit(result.session_id or "")
    assert [(e.name, e.arguments, e.is_error, e.decision.split(":")[0]) for e in audit] == [
        ("add", {"a": 1, "b": 2}, False, "allowed"),
        ("nope", "{}", True, "not run"),  # as the model wrote them: it never ran
        ("add", {"a": 5, "b": 5}, True, "denied"),
    ]
    assert audit[0].size == 1 and audit[0].duration is not None


async def test_many_concurrent_runs_on_one_agent_keep_their_sessions_apart(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        agent = make_agent(server, db)
        results = await asyncio.gather(*(agent.run(f"task {n}") for n in range(20)))
    with SQLiteStore(db) as store:
        for n, result in enumerate(results):
            assert [m.content for m in store.load(result.session_id or "")] == [f"task {n}", "ok"]
