"""What a run stores does not depend on who else listens to it, nor on how its writes are
grouped: a new session's opening is part of its run's first write and the terminal event part
of its last (issue 30 item 5), and the rows are the ones a user callback sees, slimmed."""

from __future__ import annotations

from typing import Any

from loopwright import Agent, tool
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.events import TERMINAL_TYPES, Event, event_to_dict
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call

# what differs from one run to the next whatever was recorded: times, ids made at random and
# the fake server's port
VOLATILE = frozenset({"created", "started", "latency", "duration", "run_id", "session_id", "id",
                      "tool_call_id", "call_id", "updated", "ended", "pid", "endpoint"})


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool(read_only=True)
async def broken(key: str) -> str:
    """Fails."""
    raise RuntimeError(f"no such key: {key}")


def script() -> list[Reply]:
    return [Reply(tool_calls=[call("lookup", {"key": "a"}), call("lookup", {"key": "b"})]),
            Reply(tool_calls=[call("broken", {"key": "c"})]),
            Reply(tool_calls=[call("lookup", {"wrong": 1})]),
            Reply("the answer, streamed")]


def steady(value: Any) -> Any:
    """`value` with what differs from run to run (times, random ids) blanked."""
    if isinstance(value, dict):
        return {k: "~" if k in VOLATILE else steady(v) for k, v in value.items()}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


async def recorded(store_spec: str, *, callback: bool) -> tuple[dict[str, Any], list[Event]]:
    """Every row of one run, in a new session (its id made up by the agent)."""
    seen: list[Event] = []
    with FakeModelServer(script()) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      tools=[lookup, broken], callbacks=[seen.append] if callback else [])
        result = await agent.run("go")
        await agent.aclose()
    assert result.stop_reason == "completed" and result.session_id is not None
    store = open_store(store_spec)
    assert store is not None
    sid = result.session_id
    try:
        info = await store.get(sid)
        assert info is not None
        rows = {"messages": [m.to_dict() for m in await store.load(sid)],
                "events": await store.events(sid), "runs": await store.runs(sid),
                "turns": await store.turns(sid),
                "calls": [c.to_dict() for c in await store.model_calls(sid)],
                "session": {"title": info.title, "model": info.model,
                            "base_url": info.base_url != "", "api_mode": info.api_mode,
                            "locked_by": info.locked_by, "messages": info.message_count}}
    finally:
        await store.aclose()
    return rows, seen


async def test_a_run_stores_the_same_rows_with_and_without_a_callback(store_spec: str,
                                                                      tmp_path: Any) -> None:
    alone, _ = await recorded(store_spec, callback=False)
    other = (str(tmp_path / "other.db") if not store_spec.startswith("postgresql")
             else store_spec)
    heard, seen = await recorded(other, callback=True)
    assert steady(alone) == steady(heard)
    types = [e["type"] for e in alone["events"]]
    assert types.count("tool_result") == 4 and types[-1] == "done"
    assert [e["is_error"] for e in alone["events"] if e["type"] == "tool_result"] == [
        False, False, True, True]
    assert alone["session"] == {"title": "go", "model": "test-model", "base_url": True,
                                "api_mode": "chat_completions", "locked_by": None,
                                "messages": 9}
    # the terminal event as stored is the one the loop emitted, its history counted, not kept
    done = event_to_dict(seen[-1])
    done["result"]["message_count"] = len(done["result"].pop("messages"))
    assert steady(heard["events"][-1]) == steady({**done, "run_id": "", "created": 0})


def delegating(request: RecordedRequest) -> Reply:
    body = (request.body or {})["messages"]
    if CHILD_PROMPT.splitlines()[0] in body[0]["content"]:
        return Reply("the child found 5")
    if not any(m["role"] == "assistant" for m in body):
        return Reply(tool_calls=[call("delegate", {"task": "find the number"})])
    return Reply("the answer is 5")


async def test_a_sub_agents_session_and_its_parents_each_end_with_one_terminal_event(
        store_spec: str, tmp_path: Any) -> None:
    """A sub-agent's run is tagged with its id, its own terminal event too: it is the one
    its last write holds, not a second row (the parent keeps the child's forwarded one)."""
    with FakeModelServer(handler=delegating) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      tools=[make_delegate_tool()], workdir=str(tmp_path))
        result = await agent.run("delegate it")
        await agent.aclose()
    assert result.output == "the answer is 5" and result.session_id is not None
    store = open_store(store_spec)
    assert store is not None
    try:
        children = await store.children(result.session_id)  # type: ignore[attr-defined]
        assert len(children) == 1
        child = [e for e in await store.events(children[0].id) if e["type"] in TERMINAL_TYPES]
        parent = [(e["type"], e.get("agent", ""))
                  for e in await store.events(result.session_id) if e["type"] in TERMINAL_TYPES]
    finally:
        await store.aclose()
    assert [e["type"] for e in child] == ["done"] and child[0]["agent"]
    assert parent == [("done", child[0]["agent"]), ("done", "")]
