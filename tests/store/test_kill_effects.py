"""Effects exactly once: runs killed with SIGKILL at random points, on SQLite and on a real
PostgreSQL, each resumed until its task is done, with a side-effecting tool that keeps a ledger
keyed by `ctx.idempotency_key`. No step's effect is in the ledger twice.

The scripted model does the worst a model may do: it calls an interrupted call again at once, as
it was. Every third session has a small window, so compaction runs before some of the kills.
`LOOPWRIGHT_KILL_COUNT` sets the number of kills per store (default 6, to keep the suite fast; the
figures in docs/benchmarks.md are from `LOOPWRIGHT_KILL_COUNT=40`)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.interrupted import INTERRUPTED
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.testing.scripted import RecordedRequest, ScriptItem

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

STEPS = 6
KILLS = int(os.environ.get("LOOPWRIGHT_KILL_COUNT", "6"))
SEED = int(os.environ.get("LOOPWRIGHT_KILL_SEED", "30"))
FILLER = " ".join(["thinking"] * 220)  # long replies, so a small window gets compacted
DONE = re.compile(r"applied step (\d+)")

CHILD = '''
import asyncio, json, random, sys, time
from pathlib import Path
from loopwright import Agent, ToolContext, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.store import open_store

base_url, store_spec, session_id, ledger, ready, window = sys.argv[1:7]

@tool
async def apply_step(step: int, ctx: ToolContext) -> str:
    """Apply one step of the task (a side effect, once per idempotency key)."""
    path = Path(ledger)
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry["key"] == ctx.idempotency_key:
            return f"applied step {entry['step']} (by an earlier attempt)"
    with path.open("a") as out:
        out.write(json.dumps({"step": step, "key": ctx.idempotency_key,
                              "call": ctx.call_id}) + "\\n")
    await asyncio.sleep(random.uniform(0, 0.08))  # between the effect and the return
    return f"applied step {step}"

async def main() -> None:
    store = open_store(store_spec)
    info = await store.get(session_id)
    await store.aclose()
    prompt = "" if info is not None and info.message_count else "Apply every step."
    agent = Agent("test-model", base_url=base_url, api_key="k", store=store_spec,
                  session_id=session_id, tools=[apply_step], context_window=int(window),
                  retry=RetryPolicy(base_delay=0.01, jitter=0))
    Path(ready).write_text("ready")
    result = await agent.run(prompt)
    print(json.dumps({"stop_reason": result.stop_reason, "error": result.error}))

asyncio.run(main())
'''


class StepModel:
    """The model: the next step not yet applied; an interrupted call again, as it was; a summary
    that keeps the steps applied. It counts what it saw."""

    def __init__(self) -> None:
        self.compactions = 0
        self.interrupted = 0  # calls it was told were interrupted (and made again)
        self.kept: set[str] = set()  # results that said an earlier attempt took effect

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        messages: list[dict[str, Any]] = (request.body or {})["messages"]
        text = json.dumps(messages)
        self.kept.update(m["tool_call_id"] for m in messages if m["role"] == "tool"
                         and "by an earlier attempt" in str(m["content"]))
        if str(messages[0].get("content", "")).startswith(SUMMARY_SYSTEM[:40]):
            self.compactions += 1
            steps = sorted({int(n) for n in DONE.findall(text)})
            return Reply("Done: " + ", ".join(f"applied step {n}" for n in steps))
        last = messages[-1]
        if last["role"] == "tool" and str(last["content"]).startswith(INTERRUPTED):
            self.interrupted += 1
            cut = next(c for m in messages if m["role"] == "assistant"
                       for c in m.get("tool_calls") or [] if c["id"] == last["tool_call_id"])
            arguments = json.loads(cut["function"]["arguments"])
            return Reply(FILLER, tool_calls=[call("apply_step", arguments)], delay=0.01)
        done = {int(n) for n in DONE.findall(text)}
        left = sorted(set(range(1, STEPS + 1)) - done)
        if not left:
            return Reply("Every step is applied.", delay=0.01)
        return Reply(FILLER, tool_calls=[call("apply_step", {"step": left[0]})], delay=0.01)


@dataclass
class Tally:
    kills: int = 0
    sessions: int = 0
    runs: int = 0
    duplicated: dict[str, list[int]] = field(default_factory=dict)
    missing: dict[str, list[int]] = field(default_factory=dict)


def start(tmp_path: Path, server: FakeModelServer, store_spec: str, session: str,
          window: int) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    if not script.exists():
        script.write_text(CHILD)
    ready = tmp_path / f"{session}.ready"
    ready.unlink(missing_ok=True)
    return subprocess.Popen(
        [sys.executable, str(script), server.base_url, store_spec, session,
         str(tmp_path / f"{session}.ledger"), str(ready), str(window)],
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_until_done(tmp_path: Path, server: FakeModelServer, store_spec: str, session: str,
                   window: int, kills: int, rng: random.Random, tally: Tally) -> None:
    """Kill the session's runs `kills` times at random points, then let one finish."""
    killed = 0
    while True:
        child = start(tmp_path, server, store_spec, session, window)
        tally.runs += 1
        ready = tmp_path / f"{session}.ready"
        deadline = time.monotonic() + 60
        while not ready.exists() and child.poll() is None:
            assert time.monotonic() < deadline, "the child never got ready"
            time.sleep(0.005)
        if killed < kills:
            time.sleep(rng.uniform(0, 1.0))
            if child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
                child.wait(10)
                killed += 1
                tally.kills += 1
                continue
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        ended = json.loads(out.splitlines()[-1])
        assert ended["stop_reason"] == "completed", ended
        return


def check_ledger(tmp_path: Path, session: str, tally: Tally) -> None:
    entries = []
    for line in (tmp_path / f"{session}.ledger").read_text().splitlines():
        entries.append(json.loads(line))
    steps = [e["step"] for e in entries]
    duplicated = sorted({s for s in steps if steps.count(s) > 1})
    missing = sorted(set(range(1, STEPS + 1)) - set(steps))
    if duplicated:
        tally.duplicated[session] = duplicated
    if missing:
        tally.missing[session] = missing


def test_no_effect_runs_twice_across_kills_at_random_points(
        store_spec: str, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    tally = Tally()
    model = StepModel()
    with FakeModelServer(handler=model) as server:
        while tally.kills < KILLS:
            session = f"kill-{tally.sessions}"
            window = 4_096 if tally.sessions % 3 == 2 else 200_000
            per_session = min(4, KILLS - tally.kills)
            run_until_done(tmp_path, server, store_spec, session, window, per_session, rng,
                           tally)
            check_ledger(tmp_path, session, tally)
            tally.sessions += 1
    kind = "postgresql" if store_spec.startswith("postgresql") else "sqlite"
    print(f"\n{kind}: {tally.kills} kills over {tally.sessions} sessions ({tally.runs} runs, "
          f"{model.compactions} compactions): {model.interrupted} interrupted calls made again, "
          f"{len(model.kept)} of them had taken effect (the key kept it once); duplicated "
          f"effects {tally.duplicated}, missing {tally.missing}")
    assert tally.duplicated == {}
    assert tally.missing == {}
