"""A session database that cannot grow (a full disk; here a file size limit, `ulimit -f`) when a
call that may change something is to be recorded: the call is not run, the run stops with a
`SessionError`, and a resume afterwards makes the effect once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright import Agent, ToolContext, tool
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

LIMIT = 400_000  # bytes a file of the child may reach: the first turn fits, the second does not
BIG = "x" * 300_000  # the second call's text: its reply cannot be stored under the limit

CHILD = '''
import asyncio, json, resource, sys
from pathlib import Path
from loopwright import Agent, ToolContext, tool
from loopwright.errors import SessionError

base_url, db, ledger, limit = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])

@tool
async def record_step(n: int, text: str, ctx: ToolContext) -> str:
    """Record a step (a side effect, once per idempotency key)."""
    done = json.loads(ledger.read_text()) if ledger.exists() else {}
    if ctx.idempotency_key not in done:
        done[ctx.idempotency_key] = n
        ledger.write_text(json.dumps(done))
    return f"recorded {n}"

resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
agent = Agent("test-model", base_url=base_url, api_key="k", store=db, session_id="s",
              tools=[record_step], context_window=1_000_000)
try:
    asyncio.run(agent.run("Record the steps."))
except SessionError as exc:
    print("SessionError:", exc)
'''


def ledger_steps(path: Path) -> list[int]:
    return sorted(json.loads(path.read_text()).values()) if path.exists() else []


async def test_a_call_that_cannot_be_recorded_is_not_run_and_runs_once_on_resume(
        tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    ledger = tmp_path / "ledger.json"
    steps = [Reply(tool_calls=[call("record_step", {"n": 1, "text": "a"})]),
             Reply(tool_calls=[call("record_step", {"n": 2, "text": BIG})])]
    with FakeModelServer(steps) as server:
        child = subprocess.run([sys.executable, str(script), server.base_url,
                                str(tmp_path / "s.db"), str(ledger), str(LIMIT)],
                               capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert child.stdout.startswith("SessionError: the session store failed"), child.stdout
    assert "Traceback" not in child.stderr
    assert ledger_steps(ledger) == [1]  # the second call was not run: nothing says it was made

    keys: list[str] = []

    @tool
    async def record_step(n: int, text: str, ctx: ToolContext) -> str:
        """Record a step (a side effect, once per idempotency key)."""
        keys.append(ctx.idempotency_key)
        done = json.loads(ledger.read_text())
        if ctx.idempotency_key not in done:
            done[ctx.idempotency_key] = n
            ledger.write_text(json.dumps(done))
        return f"recorded {n}"

    resumed = [Reply(tool_calls=[call("record_step", {"n": 2, "text": BIG})]), Reply("Done.")]
    with FakeModelServer(resumed) as server:
        result = await Agent("test-model", base_url=server.base_url, api_key="k",
                             store=tmp_path / "s.db", session_id="s", tools=[record_step],
                             context_window=1_000_000).run("Go on.")
    assert result.output == "Done."
    assert ledger_steps(ledger) == [1, 2]  # step 2 made once


WRITER = '''
import asyncio, os, resource, sys
from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.errors import SessionError
from loopwright.hooks import Hooks

base_url, db, workdir = sys.argv[1:4]

def disk_full_now(call):
    # the call and its reply are stored: from here on the database's files cannot grow
    size = max(os.path.getsize(db + end) for end in ("", "-wal") if os.path.exists(db + end))
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

agent = Agent("test-model", base_url=base_url, api_key="k", store=db, session_id="w",
              workdir=workdir, tools=default_tools(names=["write_file"]),
              hooks=Hooks(before_tool=[disk_full_now]))
try:
    asyncio.run(agent.run("Write the notes."))
except SessionError as exc:
    print("SessionError:", exc)
'''


async def test_a_file_write_whose_effect_cannot_be_recorded_does_not_write(
        tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("old\n")
    write = call("write_file", {"path": "notes.txt", "content": "new\n"})
    with FakeModelServer([Reply(tool_calls=[write])]) as server:
        child = subprocess.run([sys.executable, str(script), server.base_url,
                                str(tmp_path / "s.db"), str(work)],
                               capture_output=True, text=True, timeout=120)
    assert child.stdout.startswith("SessionError: the session store failed"), child.stderr
    assert (work / "notes.txt").read_text() == "old\n"  # what could not be recorded not written
