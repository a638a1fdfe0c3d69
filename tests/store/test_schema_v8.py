"""Schema v8 (issue 30 item 5): a turn writes neither a row of `turns` (SQLite) nor its run's row
(both stores). A turn's record is its `turn_end` event, which the turn's events row holds anyway,
and a run's row is written when it starts and when it ends: a run that has not ended (killed) is
given its totals so far from its turns. Readers (`turns`, `runs`, `get`, `list_sessions`) give
what they gave before; a database the v7 schema made opens with every turn it had."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import SessionError
from loopwright.messages import Usage
from loopwright.store import SessionInfo, SessionStore, open_store
from loopwright.store.rows import record_json
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.writes import StoreWrite
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptedUsage, call
from shared_helpers import schema_file, wait_for_child

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def answer(request: RecordedRequest) -> Reply:
    """Turn 1 delegates (the sub-agent's turns are forwarded into this session's events with
    its tag), turns 2-3 look something up, turn 4 answers; usage grows with the turn."""
    body = (request.body or {})["messages"]
    steps = sum(1 for m in body if m["role"] == "assistant")
    usage = ScriptedUsage(input_tokens=1000 + 7 * steps, output_tokens=100 + steps)
    if CHILD_PROMPT.splitlines()[0] in body[0]["content"]:
        return Reply("the child found 5", usage=usage)
    if steps == 0:
        return Reply(tool_calls=[call("delegate", {"task": "find the number"})], usage=usage)
    if steps < 3:
        return Reply(tool_calls=[call("lookup", {"key": f"k{steps}"})], usage=usage)
    return Reply("the answer is 5", usage=usage)


async def read_back(store_spec: str, session_id: str
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SessionInfo | None,
                               list[SessionInfo]]:
    """What the readers give for `session_id`: its turns, its runs, its info, and the list of
    sessions, from a store opened afresh."""
    store = open_store(store_spec)
    assert store is not None
    try:
        return (await store.turns(session_id),  # type: ignore[attr-defined]
                await store.runs(session_id),  # type: ignore[attr-defined]
                await store.get(session_id), await store.list_sessions())
    finally:
        await store.aclose()


async def test_readers_give_what_the_turns_and_runs_tables_gave(store_spec: str,
                                                               tmp_path: Path) -> None:
    """The figures main (7710975, with its tables) gave for this workload, read the same."""
    with FakeModelServer(handler=answer) as server:
        results = [await Agent("gpt-4o-mini", base_url=server.base_url, api_key="k",
                               tools=[make_delegate_tool(), lookup], retry=FAST,
                               store=store_spec, session_id="p1", workdir=str(tmp_path)
                               ).run(prompt) for prompt in ("delegate it", "again")]
    turns, runs, info, listed = await read_back(store_spec, "p1")
    assert [(t["turn"], t["input_tokens"], t["output_tokens"], t["requests"])
            for t in turns] == [(1, 2000, 200, 2), (2, 1007, 101, 1), (3, 1014, 102, 1),
                        (4, 1021, 103, 1), (1, 1028, 104, 1)]  # turn 1 ran the sub-agent's
    assert all(set(t) == {"session_id", "run_id", "turn", "created", "input_tokens",
                          "output_tokens", "cache_read_tokens", "cache_write_tokens",
                          "reasoning_tokens", "requests", "cost"} for t in turns)
    assert [t["run_id"] for t in turns] == [runs[0]["id"]] * 4 + [runs[1]["id"]]
    assert sum(t["cost"] for t in turns[:4]) == pytest.approx(results[0].cost)
    assert [(r["turns"], r["input_tokens"], r["output_tokens"], r["requests"], r["cost"],
             r["stop_reason"]) for r in runs] == [
        (4, 5042, 506, 5, results[0].cost, "completed"),
        (1, 1028, 104, 1, results[1].cost, "completed")]
    assert info is not None and (info.runs, info.stop_reason) == (2, "completed")
    assert info.usage.to_dict() == {"input_tokens": 6070, "output_tokens": 610,
                                    "cache_read_tokens": 0, "cache_write_tokens": 0,
                                    "reasoning_tokens": 0, "requests": 6}
    assert info.cost == pytest.approx(results[0].cost + results[1].cost)  # type: ignore[operator]
    parent = next(s for s in listed if s.id == "p1")
    assert parent.to_dict() == info.to_dict()


class Spied:
    """Wraps the call the recorder writes a batch with (SQLite: `start_batch`, else
    `write_batch`), keeping the kinds of writes each batch held."""

    def __init__(self, store: SessionStore) -> None:
        self.batches: list[list[str]] = []
        name = "start_batch" if hasattr(store, "start_batch") else "write_batch"
        inner = getattr(store, name)

        def spied(session_id: str, writes: Sequence[StoreWrite]) -> Any:
            self.batches.append([type(w).__name__ for w in writes])
            return inner(session_id, writes)

        setattr(store, name, spied)


async def test_a_turn_writes_no_run_row_and_no_turn_row(store_spec: str) -> None:
    """The run's row twice (start, end), whatever the number of turns; no turn record of its
    own. Before v8 every turn upserted both (a page of `runs`, one or two of `turns`)."""
    store = open_store(store_spec)
    assert store is not None
    spied = Spied(store)
    statements: list[str] = []
    sync = getattr(store, "sync", None)
    if isinstance(sync, SQLiteStore):
        sync._db.set_trace_callback(statements.append)
    script = [Reply(tool_calls=[call("lookup", {"key": f"k{n}"})]) for n in range(5)]
    try:
        with FakeModelServer([*script, Reply("done")]) as server:
            result = await Agent("m", base_url=server.base_url, api_key="k", tools=[lookup],
                                 store=store, session_id="s").run("go")
        runs = await store.runs("s")  # type: ignore[attr-defined]
    finally:
        await store.aclose()
    assert result.turns == 6
    kinds = [kind for batch in spied.batches for kind in batch]
    assert kinds.count("RecordRun") == 2 and "RecordTurn" not in kinds
    assert "RecordRun" in spied.batches[0] and "RecordRun" in spied.batches[-1]
    assert [(r["turns"], r["requests"]) for r in runs] == [(6, 6)]
    if isinstance(sync, SQLiteStore):
        assert sum("INSERT INTO runs" in s for s in statements) == 2
        assert not [s for s in statements if "turns" in s.split("(")[0]]


CHILD = '''
import asyncio, sys
from loopwright import Agent, tool

base_url, spec = sys.argv[1:3]

@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"

agent = Agent("gpt-4o-mini", base_url=base_url, api_key="k", store=spec, session_id="killed",
              tools=[lookup])
asyncio.run(agent.run("look three things up"))
'''


async def test_a_killed_runs_totals_are_its_turns_so_far(store_spec: str, tmp_path: Path
                                                          ) -> None:
    """Killed while the model answers turn 3: the run's row (written at its start only) reads
    as two turns' usage and cost, and so does the session."""
    usage = ScriptedUsage(input_tokens=300, output_tokens=20)
    script = [Reply(tool_calls=[call("lookup", {"key": "a"})], usage=usage),
              Reply(tool_calls=[call("lookup", {"key": "b"})], usage=usage),
              Reply("never delivered", delay=60)]
    (tmp_path / "child.py").write_text(CHILD)
    with FakeModelServer(script) as server:
        child = subprocess.Popen([sys.executable, str(tmp_path / "child.py"), server.base_url,
                                  store_spec], text=True, stderr=subprocess.PIPE)
        try:
            wait_for_child(lambda: len(server.model_requests) == 3, child)
        finally:
            child.kill()
            child.wait(10)
    turns, runs, info, _ = await read_back(store_spec, "killed")
    # the turns whose turn_end was written with the messages after it (turn 2's waits for the
    # next durable write, as its run row did before v8)
    done = len(turns)
    assert done >= 1 and [t["turn"] for t in turns] == list(range(1, done + 1))
    assert all(t["cost"] for t in turns)
    assert len(runs) == 1 and runs[0]["ended"] is None and runs[0]["stop_reason"] is None
    assert (runs[0]["turns"], runs[0]["input_tokens"], runs[0]["output_tokens"],
            runs[0]["requests"]) == (done, 300 * done, 20 * done, done)
    assert runs[0]["cost"] == pytest.approx(sum(t["cost"] for t in turns))
    assert info is not None and info.stop_reason == "interrupted"
    assert (info.usage.input_tokens, info.usage.requests) == (300 * done, done)
    assert info.cost == pytest.approx(runs[0]["cost"])


# -- a file the v7 schema made --

def turn_end(turn: int, input_tokens: int, cost: float | None, agent: str = ""
             ) -> dict[str, Any]:
    event = {"type": "turn_end", "turn": turn, "usage": {
        "input_tokens": input_tokens, "output_tokens": 1, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "reasoning_tokens": 0, "requests": 1}, "cost": cost,
        "user": [], "text": "", "reasoning": ""}
    return {**event, "agent": agent} if agent else event


V7_TURNS = [  # (session, run, turn, created, input tokens, cost) as the v7 table held them
    ("old", "r1", 1, 10.0, 100, 0.1 + 0.2), ("old", "r1", 2, 11.0, 200, None),
    ("old", "r2", 1, 12.0, 300, 1 / 3), ("other", "x1", 1, 10.5, 50, 5.0)]


def v7_database(path: Path) -> list[dict[str, Any]]:
    """A file as the v7 schema wrote it: each turn's row in `turns` and its turn_end event in
    the turn's events row (with a cost that differs in its last digits, as the recorder's own
    sum could; the table's is what readers gave), a sub-agent's forwarded turn_end, a run row
    each. What `turns('old')` gave then."""
    db = schema_file(path, 7)
    for session in ("old", "other"):
        db.execute("INSERT INTO sessions (id, created, updated) VALUES (?, 0, 0)", (session,))
    for session, run, turn, created, tokens, cost in V7_TURNS:
        db.execute("INSERT INTO turns (session_id, run_id, turn, created, input_tokens, "
                   "output_tokens, requests, cost) VALUES (?, ?, ?, ?, ?, 1, 1, ?)",
                   (session, run, turn, created, tokens, cost))
        events = [{"type": "turn_start", "turn": turn}, turn_end(1, 7, 0.5, agent="child"),
                  turn_end(turn, tokens, None if cost is None else cost + 1e-18)]
        db.execute("INSERT INTO events (session_id, run_id, created, type, data) VALUES "
                   "(?, ?, ?, 'batch', ?)", (session, run, created, record_json(events)))
    db.executemany("INSERT INTO runs (id, session_id, started, ended, stop_reason, turns, "
                   "input_tokens, requests, cost) VALUES (?, 'old', ?, ?, ?, ?, ?, ?, ?)",
                   [("r1", 10.0, 11.5, "completed", 2, 300, 2, None),
                    ("r2", 12.0, None, None, 1, 300, 1, 1 / 3)])
    db.commit()
    cursor = db.execute("SELECT * FROM turns WHERE session_id = 'old' ORDER BY created, turn")
    names = [d[0] for d in cursor.description]
    before = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    db.close()
    return before


def test_a_v7_database_migrates_with_every_turn_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    before = v7_database(path)
    with SQLiteStore(path) as store:
        turns = store.turns("old")
        assert turns == before  # exactly: every column, every digit of the cost
        assert [t["cost"] for t in turns] == [0.1 + 0.2, None, 1 / 3]
        assert [t["turn"] for t in store.turns("other")] == [1]
        assert "turn_record" not in {e["type"] for e in store.events("old")}
        assert [e["type"] for e in store.events("old")].count("turn_end") == 6  # as before
        runs = store.runs("old")
        assert [(r["turns"], r["input_tokens"], r["requests"]) for r in runs] == [
            (2, 300, 2), (1, 300, 1)]  # r2 not ended: summed from its turn, as its row said
        store.record_turn("old", "r1", 2, Usage(input_tokens=250), 0.25)  # replaces turn 2
        assert [(t["turn"], t["input_tokens"], t["cost"]) for t in store.turns("old")] == [
            (1, 100, 0.1 + 0.2), (1, 300, 1 / 3), (2, 250, 0.25)]
        store.record_events("old", "r3", [turn_end(1, 40, 0.5)])  # recorded on, the v8 way
        assert store.turns("old")[-1]["run_id"] == "r3"
        store.delete("old")
        assert store.turns("old") == [] and [t["turn"] for t in store.turns("other")] == [1]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'turns'").fetchone() is None
    db.close()


def test_a_damaged_turn_is_a_session_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s")
        store.record_events("s", "r1", [{"type": "turn_end", "turn": "two", "usage": {}}])
        with pytest.raises(SessionError, match=r"session s: a turn of run r1 is damaged"):
            store.turns("s")
        store._db.execute("UPDATE events SET data = '[{\"type\": \"turn_e' WHERE "
                          "session_id = 's'")
        with pytest.raises(SessionError, match="session s: an event of run r1 is damaged"):
            store.turns("s")


def test_the_turn_record_rows_of_v8_hold_the_turn_end_shape(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s")
        store.record_turn("s", "r1", 1, Usage(input_tokens=5, requests=1), None)
        (data,) = store._db.execute("SELECT data FROM events WHERE type = 'turn_record'"
                                    ).fetchone()
    assert json.loads(data) == {"type": "turn_end", "turn": 1, "cost": None, "usage": {
        "input_tokens": 5, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
        "reasoning_tokens": 0, "requests": 1}}
