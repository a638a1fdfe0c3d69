"""A server that numbers every turn's call `call_0` (some local servers, and any that sends none),
a compaction in the run, then a kill inside a side-effecting call: the run resumed from the
compacted history gives the call made again the key the cut call ran with, so a key-aware tool
makes the effect once. (The compacted history holds fewer calls with that id than the run had
seen when it keyed the call.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, ToolContext, tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.messages import Message
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.testing.scripted import RecordedRequest, ScriptItem

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

WINDOW = 4_096  # tokens: the first reply's text fills it, so the run compacts after it
FILLER = " ".join(["thinking"] * 400)

CHILD = '''
import asyncio, json, sys, time
from pathlib import Path
from loopwright import Agent, ToolContext, tool

base_url, db, ledger, window = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])

@tool
async def charge(amount: int, ctx: ToolContext) -> str:
    """Charge the card (a side effect, once per idempotency key)."""
    done = json.loads(ledger.read_text()) if ledger.exists() else {}
    done[ctx.idempotency_key] = amount
    ledger.write_text(json.dumps(done))
    if amount == 7:
        time.sleep(60)  # killed here: the charge is made, its result not stored
    return f"charged {amount}"

@tool(read_only=True)
async def look() -> str:
    """Look around."""
    return "nothing new"

asyncio.run(Agent("test-model", base_url=base_url, api_key="k", store=db, session_id="s",
                  tools=[charge, look], context_window=window).run("Charge 5, then 7."))
'''


class Model:
    """Charges 5, looks around until the run compacts, then charges 7; every call's id is
    call_0, so the compacted history holds fewer calls with it than the run had seen."""

    def __init__(self) -> None:
        self.compactions = 0

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        messages: list[dict[str, Any]] = (request.body or {})["messages"]
        if str(messages[0].get("content", "")).startswith(SUMMARY_SYSTEM[:40]):
            self.compactions += 1
            return Reply("Summary: 5 was charged; 7 is next.")
        if "Summary: 5 was charged" in json.dumps(messages):
            return Reply(tool_calls=[call("charge", {"amount": 7}, id="call_0")])
        if not any(m["role"] == "tool" for m in messages):
            return Reply(FILLER, tool_calls=[call("charge", {"amount": 5}, id="call_0")])
        return Reply(FILLER, tool_calls=[call("look", id="call_0")])


def earlier_turns(db: Path) -> None:
    """Session s so far: long replies, short of what the window holds."""
    with SQLiteStore(db) as store:
        store.create("s")
        for n in range(0):
            store.append_many("s", [Message(role="user", content=f"Think {n}."),
                                    Message(role="assistant", content=f"{n} {FILLER}")])


def killed_inside_the_second_charge(tmp_path: Path, ledger: Path) -> int:
    """Run the child until it has charged 7, kill it there; the compactions it made."""
    earlier_turns(tmp_path / "s.db")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    model = Model()
    with FakeModelServer(handler=model) as server:
        child = subprocess.Popen([sys.executable, str(script), server.base_url,
                                  str(tmp_path / "s.db"), str(ledger), str(WINDOW)],
                                 text=True, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while 7 not in (json.loads(ledger.read_text()).values() if ledger.exists() else []):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never charged 7"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    return model.compactions


async def test_a_cut_call_with_a_reused_id_keeps_its_key_after_a_compaction(
        tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    assert killed_inside_the_second_charge(tmp_path, ledger) == 1

    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card (a side effect, once per idempotency key)."""
        done = json.loads(ledger.read_text())
        if ctx.idempotency_key in done:
            return "already charged"
        done[ctx.idempotency_key] = amount
        ledger.write_text(json.dumps(done))
        return f"charged {amount}"

    again = [Reply(tool_calls=[call("charge", {"amount": 7}, id="call_0")]), Reply("Done.")]
    with FakeModelServer(again) as server:
        result = await Agent("test-model", base_url=server.base_url, api_key="k",
                             store=tmp_path / "s.db", session_id="s", tools=[charge],
                             context_window=200_000).run("")
    assert [m.content for m in result.messages if m.role == "tool"][-1] == "already charged"
    assert sorted(json.loads(ledger.read_text()).values()) == [5, 7]
