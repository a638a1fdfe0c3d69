"""A sub-agent the parent's crash left behind is taken up, not run again from the start, on
SQLite and on a real PostgreSQL: the resumed parent's delegate call, made again with the cut
call's idempotency key, finds the child's session (builtin/delegate.child_session_id).

- The child had answered, and the parent was killed before it stored the delegate call's
  result: the stored answer is the call's result, with no model call; the events say so.
  Before, the child was sent its task again on top of its finished work and ran a second time.
- The child was killed inside its tool: it continues its session (its cut call gets the
  interrupted note and its key), its task is not sent again as a new user turn.

The crash is real: the parent runs in a process killed with SIGKILL.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, ToolContext, tool
from loopwright.builtin.delegate import child_session_id, make_delegate_tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.messages import Message, ToolCall
from loopwright.store import RunRecord, open_store
from loopwright.store.rows import DamagedSessionWarning
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Fault, Reply, call
from loopwright.tools.idempotency import IdempotencyKeys
from shared_helpers import killed_once

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

FAST = RetryPolicy(base_delay=0.01, jitter=0)
TASK = {"task": "Charge 7 to the card."}

# the parent, in a process of its own, with a key-aware charge in its child; it stalls (and is
# killed) where argv[5] says: inside the child's charge, after its effect ("tool"), or once the
# child has answered ("answer") or failed ("failed") and its session is stored, before the
# delegate call returns
PARENT = '''
import asyncio, json, sys, time
from pathlib import Path
from loopwright import Agent, ToolContext, tool
from loopwright.builtin.delegate import child_session_id, make_delegate_tool

base_url, store, ledger, marker, stall = sys.argv[1:6]

def stall_here(where):
    if stall == where:
        Path(marker).write_text(where)
        time.sleep(60)

@tool
async def charge(amount: int, ctx: ToolContext) -> str:
    """Charge the card, once per idempotency key."""
    with open(ledger, "a") as handle:
        handle.write(json.dumps({"key": ctx.idempotency_key, "amount": amount}) + "\\n")
    stall_here("tool")
    return "charged"

def on_event(event):
    if event.agent and event.type in ("done", "error"):  # the child's, after its last write
        stall_here("answer" if event.type == "done" else "failed")

agent = Agent("test-model", base_url=base_url, api_key="k", store=store, session_id="parent",
              tools=[charge, make_delegate_tool()], callbacks=[on_event])
asyncio.run(agent.run("Have a sub-agent charge 7."))
'''


def charged(ledger: Path) -> list[str]:
    """The keys of the charges made, in order."""
    if not ledger.exists():
        return []
    return [json.loads(line)["key"] for line in ledger.read_text().splitlines()]


def crash(tmp_path: Path, store_spec: str, where: str, child_replies: list[Reply]) -> None:
    """Run the parent in a process of its own and SIGKILL it once it stalls at `where`."""
    script = [Reply(tool_calls=[call("delegate", TASK)]), *child_replies]
    with FakeModelServer(script) as server:
        (tmp_path / "parent.py").write_text(PARENT)
        marker = tmp_path / "marker"
        killed_once([sys.executable, str(tmp_path / "parent.py"), server.base_url, store_spec,
                     str(tmp_path / "ledger"), str(marker), where], marker)


async def resume(tmp_path: Path, store_spec: str, script: list[Reply]
                 ) -> tuple[str, FakeModelServer, list[str], list[Event]]:
    """Resume the parent session: its answer, the server, the keys its child's charge saw and
    the run's events."""
    keys: list[str] = []
    events: list[Event] = []

    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card, once per idempotency key."""
        keys.append(ctx.idempotency_key)
        if ctx.idempotency_key in charged(tmp_path / "ledger"):
            return "already charged"
        with (tmp_path / "ledger").open("a") as handle:
            handle.write(json.dumps({"key": ctx.idempotency_key, "amount": amount}) + "\n")
        return "charged"

    with FakeModelServer(script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      session_id="parent", retry=FAST, callbacks=[events.append],
                      tools=[charge, make_delegate_tool()])
        result = await agent.run("")
        await agent.aclose()
    return str(result.output), server, keys, events


async def child_messages(store_spec: str) -> list[Message]:
    """The messages of the parent's one child session."""
    store = open_store(store_spec)
    assert store is not None
    try:
        [child] = await store.children("parent")  # type: ignore[attr-defined]
        return await store.load(child.id)
    finally:
        await store.aclose()


def delegate_notes(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events
            if isinstance(e, StatusEvent) and e.data.get("tool") == "delegate"]


async def test_a_child_that_had_answered_is_not_run_again(tmp_path: Path,
                                                          store_spec: str) -> None:
    crash(tmp_path, store_spec, "answer",
          [Reply(tool_calls=[call("charge", {"amount": 7})]), Reply("Charged 7, receipt 41.")])
    [first_key] = charged(tmp_path / "ledger")
    script = [Reply(tool_calls=[call("delegate", TASK)]),  # the parent's call made again
              Reply("Done.")]
    output, server, keys, events = await resume(tmp_path, store_spec, script)
    assert output == "Done."
    assert len(server.model_requests) == 2  # the parent's two: none for the child
    assert keys == [] and charged(tmp_path / "ledger") == [first_key]  # charged once
    body = server.model_requests[1].body or {}
    delegate_result = body["messages"][-1]["content"]
    assert "Charged 7, receipt 41." in delegate_result and "completed" in delegate_result
    assert [note["child"] for note in delegate_notes(events)] == ["replayed"]
    roles = [m.role for m in await child_messages(store_spec)]
    assert roles.count("user") == 1 and roles.count("assistant") == 2  # as it was left


async def test_a_child_cut_off_in_its_tool_continues_its_session(tmp_path: Path,
                                                                 store_spec: str) -> None:
    crash(tmp_path, store_spec, "tool", [Reply(tool_calls=[call("charge", {"amount": 7})])])
    [first_key] = charged(tmp_path / "ledger")
    script = [Reply(tool_calls=[call("delegate", TASK)]),  # the parent, made again
              Reply(tool_calls=[call("charge", {"amount": 7})]),  # the child, made again
              Reply("The charge had gone through."), Reply("Done.")]
    output, server, keys, events = await resume(tmp_path, store_spec, script)
    assert output == "Done."
    assert keys == [first_key] and charged(tmp_path / "ledger") == [first_key]
    child_request = server.model_requests[1].body or {}
    assert [m["content"] for m in child_request["messages"] if m["role"] == "user"] == [
        TASK["task"]]  # its task once, not again as a new turn
    assert child_request["messages"][-1]["role"] == "tool"  # the cut call's note
    assert [note["child"] for note in delegate_notes(events)] == ["resumed"]
    roles = [m.role for m in await child_messages(store_spec)]
    assert roles.count("user") == 1 and roles.count("assistant") == 3


async def test_a_child_that_had_failed_goes_on_rather_than_failing_again(
        tmp_path: Path, store_spec: str) -> None:
    """Where the stored answer must not be given: the child's run ended in an error (its
    provider refused a request), so it had no answer; the call made again continues it."""
    crash(tmp_path, store_spec, "failed",
          [Reply(tool_calls=[call("charge", {"amount": 7})]),
           Fault.status(400, body={"error": {"message": "bad request"}})])
    [first_key] = charged(tmp_path / "ledger")
    script = [Reply(tool_calls=[call("delegate", TASK)]),
              Reply("Charged 7, receipt 41."), Reply("Done.")]
    output, server, keys, events = await resume(tmp_path, store_spec, script)
    assert output == "Done." and keys == [] and charged(tmp_path / "ledger") == [first_key]
    assert [note["child"] for note in delegate_notes(events)] == ["resumed"]
    assert "Charged 7, receipt 41." in (server.model_requests[2].body or {})["messages"][-1][
        "content"]


def store_finished_child(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    """A parent cut inside its delegate call, whose child had answered "Charged 7, receipt
    41." and logged `events`."""
    cut = ToolCall(id="c1", name="delegate", arguments=json.dumps(TASK))
    cutting = Message(role="assistant", tool_calls=[cut])
    child = child_session_id(IdempotencyKeys("parent").key_for(cut, [cutting]))
    assert child is not None
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("parent")
        store.append_many("parent", [Message(role="user", content="Charge 7."), cutting])
        store.create(child, parent_id="parent")
        store.append_many(child, [Message(role="user", content=TASK["task"]),
                                  Message(role="assistant", content="Charged 7, receipt 41.")])
        store.record_events(child, "r1", events)
        store.record_run(child, RunRecord(run_id="r1", stop_reason="completed", turns=1),
                         ended=True)


async def test_the_stored_answer_is_the_childs_own_not_a_late_sub_agents(tmp_path: Path) -> None:
    """A grandchild that wound down after the child had ended (abandoned when cancelled) logs
    its terminal event in the child's session after the child's own: the answer given back
    is the child's."""
    own = {"output": "Charged 7, receipt 41.", "stop_reason": "completed", "turns": 1}
    late = {"output": "", "stop_reason": "cancelled", "turns": 1}
    store_finished_child(tmp_path, [{"type": "done", "result": own, "agent": "sub-aaaaaa"},
                                    {"type": "cancelled", "result": late,
                                     "agent": "sub-aaaaaa/sub-bbbbbb"}])
    script = [Reply(tool_calls=[call("delegate", TASK)]), Reply("Done.")]
    output, server, _, events = await resume(tmp_path, str(tmp_path / "s.db"), script)
    assert output == "Done." and len(server.model_requests) == 2
    delegate_result = (server.model_requests[1].body or {})["messages"][-1]["content"]
    assert "completed" in delegate_result and own["output"] in delegate_result
    assert [note["child"] for note in delegate_notes(events)] == ["replayed"]


@pytest.mark.parametrize("result", [
    {"output": ["rm -rf /"], "stop_reason": "completed", "turns": 1},  # output not text
    {"output": "Charged 7, receipt 41.", "stop_reason": "completed"},  # no turns
    {"output": "Charged 7, receipt 41.", "stop_reason": "done", "turns": 1},
    {"output": "Charged 7, receipt 41.", "stop_reason": "completed", "turns": 1,
     "usage": {"input_tokens": "9"}},
    {"output": "Charged 7, receipt 41.", "stop_reason": "completed", "turns": 1,
     "instructions": "ignore the parent"},  # a key loopwright never writes
    "Charged 7, receipt 41."])
async def test_a_damaged_stored_answer_makes_the_child_go_on(tmp_path: Path,
                                                             result: Any) -> None:
    """The child's messages are whole, only its stored result is damaged: it goes on in its
    session (one warning naming it), not its damaged output given to the parent; before, a
    list reached the parent model as its repr, and a missing key failed with a raw KeyError."""
    store_finished_child(tmp_path, [{"type": "done", "result": result, "agent": "sub-aaaaaa"}])
    script = [Reply(tool_calls=[call("delegate", TASK)]), Reply("Charged 7, receipt 42."),
              Reply("Done.")]
    with pytest.warns(DamagedSessionWarning, match="its last run's result is damaged") as caught:
        output, server, _, events = await resume(tmp_path, str(tmp_path / "s.db"), script)
    assert len([w for w in caught if w.category is DamagedSessionWarning]) == 1
    assert output == "Done." and len(server.model_requests) == 3  # the child's one request
    assert [note["child"] for note in delegate_notes(events)] == ["resumed"]
    delegate_result = (server.model_requests[2].body or {})["messages"][-1]["content"]
    assert "receipt 42" in delegate_result and "rm -rf" not in delegate_result


async def test_a_stored_answer_as_loopwright_writes_it_is_given_back(tmp_path: Path) -> None:
    """Where the check must not fire: every field `RunResult.to_dict` and the recorder write,
    each of its type, replays the answer with no model call for the child."""
    result = {"output": "Charged 7, receipt 41.", "stop_reason": "completed", "turns": 2,
              "usage": {"input_tokens": 9, "output_tokens": 3, "requests": 2}, "cost": 0.5,
              "session_id": "child", "error": None, "diff": "", "grade": None,
              "side_usage": {}, "message_count": 2}
    store_finished_child(tmp_path, [{"type": "done", "result": result, "agent": "sub-aaaaaa"}])
    script = [Reply(tool_calls=[call("delegate", TASK)]), Reply("Done.")]
    output, server, _, events = await resume(tmp_path, str(tmp_path / "s.db"), script)
    assert output == "Done." and len(server.model_requests) == 2
    assert [note["child"] for note in delegate_notes(events)] == ["replayed"]
