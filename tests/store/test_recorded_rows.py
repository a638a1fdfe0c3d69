"""What a run stores does not depend on who else listens to it, nor on how its writes are
grouped: a new session's opening is part of its run's first write and the terminal event part
of its last (issue 30 item 5), and the rows are the ones a user callback sees, slimmed."""

from __future__ import annotations

from typing import Any

from loopwright import Agent, tool
from loopwright.events import Event, event_to_dict
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply, call

# what differs from one run to the next whatever was recorded: times, ids made at random and
# the fake server's port
VOLATILE = frozenset({"created", "started", "latency", "duration", "run_id", "session_id", "id",
                      "tool_call_id", "updated", "ended", "pid", "endpoint"})


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
