"""Every column of every table a session uses, damaged one at a time in a real SQLite file (cut
JSON, JSON of the wrong type, NULL, huge values, bytes that are not UTF-8, negative and
overflowing integers, another session's id), then read every way a user reads a session:
resumed by `Agent.run`, and each `loopwright sessions` command. Each must either work or end in a
`SessionError` (the CLI: exit 1 with its message) — never another exception, never a traceback.

Seeded, so a failure replays: the damages of each column are drawn by `random.Random(SEED)`.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from damage_helpers import SID, add, cli_at, one_run_of_add, resume

from loopwright import Agent
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.effects import EFFECT_EVENT

SEED = 30
TABLES = ("sessions", "messages", "events", "runs")
DAMAGES_PER_COLUMN = 3

# each: the stored value as it is → the damaged one (None: NULL)
DAMAGES: dict[str, Any] = {
    "cut": lambda value: value[: max(1, len(value) // 2)] if isinstance(value, str) else value,
    "json list": lambda value: "[1, 2]",
    "json string": lambda value: '"text"',
    "json number": lambda value: "7",
    "json null": lambda value: "null",
    "json fields of the wrong types": lambda value: (
        '{"tool_calls": [{"id": 5, "name": null, "arguments": 7}], "tool_call_id": 3, '
        '"name": [], "marks": 5, "attachments": [1], "is_error": "no", "files": 3, "id": [], '
        '"type": 9, "turn": "one", "usage": [], "record": 4, "content": {}}'),
    "null": lambda value: None,
    "huge text": lambda value: "x" * 1_000_000,
    "not utf-8": lambda value: b"\xff\xfe\x80 not text",
    "negative": lambda value: -1,
    "overflow": lambda value: 2**63 - 1,
    "float": lambda value: 1e308,
    "text in a number": lambda value: "seven",
    "another session": lambda value: "no-such-session",
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session as runs leave it: a completed run with a tool call, a compaction, a child
    session, and a last call cut off by a crash with its effect recorded."""
    folder = tmp_path_factory.mktemp("pristine")
    db = one_run_of_add(folder)
    cut = ToolCall(id="cut1", name="write_file", arguments='{"path": "a.txt", "content": "b"}')
    with SQLiteStore(db) as store:
        history = store.load(SID)
        store.compact(SID, [history[0], Message(role="user", content="summary: added 2 and 3")])
        store.append_many(SID, [Message(role="assistant", tool_calls=[cut])])
        store.record_events(SID, "r2", [{"type": EFFECT_EVENT, "id": "cut1",
                                        "name": "write_file", "files": [
                                            {"path": str(folder / "a.txt"), "before": None,
                                             "after": "0" * 64}]}])
        store.create("child", parent_id=SID, title="a sub-agent")
    return db


def columns(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def cases(db: Path, table: str) -> Iterator[tuple[str, str, int]]:
    """(column, damage, row) to try, drawn with the seed."""
    rng = random.Random(f"{SEED}:{table}")
    with sqlite3.connect(db) as conn:
        rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
    for column in columns(db, table):
        for damage in rng.sample(sorted(DAMAGES), DAMAGES_PER_COLUMN):
            yield column, damage, rng.choice(rowids)


def damage(source: Path, target: Path, table: str, column: str, kind: str, rowid: int
           ) -> bool:
    """`target`: a copy of `source` with one value damaged; False when SQLite refused it (a
    NOT NULL column, a unique key taken)."""
    with sqlite3.connect(source) as original, sqlite3.connect(target) as copy:
        original.backup(copy)  # what the write-ahead log holds too
    with sqlite3.connect(target) as conn:
        value = conn.execute(f"SELECT {column} FROM {table} WHERE rowid = ?",
                             (rowid,)).fetchone()[0]
        try:
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?",
                         (DAMAGES[kind](value), rowid))
        except sqlite3.IntegrityError:
            return False
    return True


def cli(db: Path, *args: str) -> str | None:
    return cli_at(str(db), *args)


# the richest read (header, lineage, children, transcript, turns, diffs, audit, events) runs
# for every damage; one of the others, drawn with the seed, with it (each takes ~25 ms)
SHOW_ALL = ("show", SID, "--all", "--turns", "--events", "--full", "--diffs")
OTHER_READS = [("list",), ("list", "--json"), ("show", "child"), ("search", "add"),
               ("export", SID), ("rm", "-y", SID)]


@pytest.mark.parametrize("table", TABLES)
async def test_every_damaged_column_is_read_or_refused_cleanly(
        pristine: Path, tmp_path: Path, table: str) -> None:
    failures = []
    rng = random.Random(f"{SEED}:reads:{table}")
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        for n, (column, kind, rowid) in enumerate(cases(pristine, table)):
            db = tmp_path / f"{n}.db"
            if not damage(pristine, db, table, column, kind, rowid):
                continue
            where = f"{table}.{column} (row {rowid}) {kind}"
            problems = [cli(db, *SHOW_ALL), cli(db, *rng.choice(OTHER_READS)),
                        await resume(db, server)]
            failures += [f"{where}: {problem}" for problem in problems if problem]
            db.unlink()
    assert not failures, "\n".join(failures)


# PostgreSQL keeps each column's type, so what can be damaged is what the type allows
PG_DAMAGES = [
    ("messages", "data", "'{\"tool_calls\":[{\"id\":\"c1\",\"na'"),
    ("messages", "data", "'[1, 2]'"),
    ("messages", "role", "'robot'"),
    ("events", "data", "'7'"),
    ("events", "created", "'Infinity'"),
    ("sessions", "updated", "'NaN'"),
    ("sessions", "created", "-1e300"),
    ("sessions", "epoch", "-1"),
    ("runs", "input_tokens", "-5"),
    ("runs", "cost", "'Infinity'"),
    ("turns", "created", "'-Infinity'"),
    ("turns", "output_tokens", "-1"),
]


async def test_damaged_columns_on_postgresql(postgres_server: str) -> None:
    import psycopg

    from pg_server import fresh_database

    failures = []
    with FakeModelServer([Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("5"),
                          Reply("ok")], repeat=True) as server:
        for table, column, value in PG_DAMAGES:
            dsn = fresh_database(postgres_server)
            await Agent("test-model", base_url=server.base_url, api_key="k", store=dsn,
                        session_id=SID, tools=[add]).run("add 2 and 3")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"UPDATE {table} SET {column} = {value}")  # every row of it
            where = f"postgresql {table}.{column} = {value}"
            problems = [cli_at(dsn, *SHOW_ALL), cli_at(dsn, "list"), cli_at(dsn, "search", "add"),
                        await resume(dsn, server)]
            failures += [f"{where}: {problem}" for problem in problems if problem]
    assert not failures, "\n".join(failures)
