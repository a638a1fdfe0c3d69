"""A sub-agent's effects happen once across a parent crash: the resumed parent's delegate call,
made again with the cut call's idempotency key, runs its child in the cut child's session, so a
key-aware tool inside the child gets the key its cut call had and does not repeat its effect.
Two different delegate calls still run children of their own.

Before, each child got a fresh session: the repeated delegate call's child charged again.
The crash is real: the parent runs in a process killed with SIGKILL inside the child's tool.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loopwright import Agent, ToolContext, tool
from loopwright.builtin.delegate import make_delegate_tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import killed_once

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

FAST = RetryPolicy(base_delay=0.01, jitter=0)
TASK = {"task": "Charge 7 to the card."}

# the parent, in a process of its own: its child charges (the effect is in the ledger), then
# stalls in the tool until it is killed
PARENT = '''
import asyncio, json, sys, time
from pathlib import Path
from loopwright import Agent, ToolContext, tool
from loopwright.builtin.delegate import make_delegate_tool

base_url, db, ledger, marker = sys.argv[1:5]

@tool
async def charge(amount: int, ctx: ToolContext) -> str:
    """Charge the card, once per idempotency key."""
    with open(ledger, "a") as handle:
        handle.write(json.dumps({"key": ctx.idempotency_key, "amount": amount}) + "\\n")
    Path(marker).write_text("charged")
    time.sleep(60)
    return "charged"

agent = Agent("test-model", base_url=base_url, api_key="k", store=db, session_id="parent",
              tools=[charge, make_delegate_tool()])
asyncio.run(agent.run("Have a sub-agent charge 7."))
'''


def ledger_tool(ledger: Path, keys: list[str]) -> object:
    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card, once per idempotency key."""
        keys.append(ctx.idempotency_key)
        if ctx.idempotency_key in charged(ledger):
            return "already charged"
        with ledger.open("a") as handle:
            handle.write(json.dumps({"key": ctx.idempotency_key, "amount": amount}) + "\n")
        return "charged"

    return charge


def charged(ledger: Path) -> list[str]:
    """The keys of the charges made, in order."""
    if not ledger.exists():
        return []
    return [json.loads(line)["key"] for line in ledger.read_text().splitlines()]


def parent(server: FakeModelServer, db: Path, ledger: Path, keys: list[str],
           session_id: str = "parent") -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                 session_id=session_id, retry=FAST,
                 tools=[ledger_tool(ledger, keys), make_delegate_tool()])


def crash_inside_the_childs_charge(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("delegate", TASK)]),  # the parent
              Reply(tool_calls=[call("charge", {"amount": 7})])]  # its child
    with FakeModelServer(script) as server:
        (tmp_path / "parent.py").write_text(PARENT)
        marker = tmp_path / "marker"
        killed_once([sys.executable, str(tmp_path / "parent.py"), server.base_url,
                     str(tmp_path / "s.db"), str(tmp_path / "ledger"), str(marker)], marker)


async def test_the_delegate_call_made_again_after_a_crash_does_not_repeat_the_childs_effect(
        tmp_path: Path) -> None:
    crash_inside_the_childs_charge(tmp_path)
    [first_key] = charged(tmp_path / "ledger")
    keys: list[str] = []
    script = [Reply(tool_calls=[call("delegate", TASK)]),  # the parent, made again
              Reply(tool_calls=[call("charge", {"amount": 7})]),  # the child, made again
              Reply("The charge had gone through."), Reply("Done.")]
    with FakeModelServer(script) as server:
        result = await parent(server, tmp_path / "s.db", tmp_path / "ledger", keys).run("")
    assert result.output == "Done."
    assert keys == [first_key]  # the child's call made again has its cut call's key
    assert charged(tmp_path / "ledger") == [first_key]  # charged once
    with SQLiteStore(tmp_path / "s.db") as store:  # one child session, continued
        [child] = store.children("parent")
        assert [m.role for m in store.load(child.id)].count("assistant") == 3


async def test_two_delegate_calls_run_children_of_their_own(tmp_path: Path) -> None:
    """Where the key must not carry over: the same task delegated twice in a healthy run (and
    by another parent session) is charged each time."""
    keys: list[str] = []
    for session in ("parent", "parent", "other-parent"):
        script = [Reply(tool_calls=[call("delegate", TASK)]),
                  Reply(tool_calls=[call("charge", {"amount": 7})]),
                  Reply("Charged."), Reply("Done.")]
        with FakeModelServer(script) as server:
            agent = parent(server, tmp_path / "s.db", tmp_path / "ledger", keys, session)
            result = await agent.run("Have a sub-agent charge 7.")
        assert result.output == "Done."
    assert len(set(keys)) == 3 and charged(tmp_path / "ledger") == keys
    with SQLiteStore(tmp_path / "s.db") as store:
        assert len(store.children("parent")) == 2 and len(store.children("other-parent")) == 1
