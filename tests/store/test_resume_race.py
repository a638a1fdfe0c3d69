"""Two processes resuming one crashed session at once: one takes the lease and resumes it, the
other stops with a `SessionError` naming the run that holds it, before it reads or writes
anything; the cut call gets one note and its effect is made once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwright.interrupted import is_interrupted_result
from loopwright.messages import Message, ToolCall
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")

RESUMER = '''
import asyncio, json, sys, time
from pathlib import Path
from loopwright import Agent, ToolContext, tool
from loopwright.errors import SessionError

base_url, db, ledger, hold = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])

@tool
async def charge(amount: int, ctx: ToolContext) -> str:
    """Charge the card (a side effect, once per idempotency key)."""
    hold.write_text("inside")
    while hold.read_text() != "go":  # the other process tries meanwhile
        await asyncio.sleep(0.02)
    done = json.loads(ledger.read_text()) if ledger.exists() else {}
    if ctx.idempotency_key in done:
        return "already charged"
    done[ctx.idempotency_key] = amount
    ledger.write_text(json.dumps(done))
    return f"charged {amount}"

try:
    result = asyncio.run(Agent("test-model", base_url=base_url, api_key="k", store=db,
                               session_id="s", tools=[charge]).run(""))
    print("resumed:", result.output)
except SessionError as exc:
    print("SessionError:", exc)
'''


def start(script: Path, url: str, store_spec: str, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(script), url, store_spec,
                             str(tmp_path / "ledger.json"), str(tmp_path / "hold")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def test_two_processes_resuming_one_session_at_once(tmp_path: Path,
                                                          store_spec: str) -> None:
    cut = ToolCall(id="c1", name="charge", arguments='{"amount": 7}')
    store = open_store(store_spec)
    assert store is not None
    await store.create("s")
    await store.append_many("s", [Message(role="user", content="Charge 7."),
                                  Message(role="assistant", tool_calls=[cut])])
    script = tmp_path / "resumer.py"
    script.write_text(RESUMER)
    again = [Reply(tool_calls=[call("charge", {"amount": 7})]), Reply("Done.")]
    with FakeModelServer(again, strict=False) as one, FakeModelServer(again, strict=False) as two:
        first = start(script, one.base_url, store_spec, tmp_path)
        deadline = time.monotonic() + 60
        while not (tmp_path / "hold").exists():  # the first holds the lease, inside the tool
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first never reached the tool"
            time.sleep(0.02)
        second = start(script, two.base_url, store_spec, tmp_path)
        out, err = second.communicate(timeout=60)
        (tmp_path / "hold").write_text("go")
        first_out, first_err = first.communicate(timeout=60)
    assert out.startswith("SessionError: session s is in use by another run"), (out, err)
    assert not two.model_requests  # it stopped before asking the model anything
    assert first_out.strip() == "resumed: Done.", first_err
    assert len(json.loads((tmp_path / "ledger.json").read_text())) == 1
    try:
        notes = [m for m in await store.load("s") if is_interrupted_result(m)]
    finally:
        await store.aclose()
    assert len(notes) == 1 and notes[0].tool_call_id == "c1"
