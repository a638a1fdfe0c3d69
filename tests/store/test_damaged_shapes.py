"""A session damaged the ways the column-by-column fuzz test (test_damaged_fuzz.py) does not
reach: each message's JSON given another shape (a field of another type, a key loopwright
never writes, a key it always writes taken out), rows moved, lost or copied, event rows of
unknown types and odd shapes, text that is not UTF-8 in each text column, a table or a column
gone, a schema from the future, and the file swapped for a device or a pipe.

A damaged message must never reach the model as if it were good: resuming the session is
refused with a `SessionError` naming it, before any request. Every other read (each
`loopwright sessions` command) works or fails with a message — never a traceback, never a hang.
Seeded: each case is drawn by `random.Random(SEED)`, so a failure replays.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from damage_helpers import SID, add, cli_at, one_run_of_add, resume
from typer.testing import CliRunner

from loopwright import Agent
from loopwright.attachments import image
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply
from loopwright.tools.effects import EFFECT_EVENT

SEED = 17
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00"
       b"\x00\x90wS\xde")
SHOW_ALL = ("show", SID, "--all", "--turns", "--events", "--full", "--diffs")
NOT_UTF8 = "CAST(X'ff41fe80' AS TEXT)"  # text SQLite holds as it was given: not UTF-8


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session whose messages hold every field `Message` stores: tool calls and their results
    (one an error, one marked), an image, reasoning and a provider's blocks; with an effect
    record and a compaction."""
    folder = tmp_path_factory.mktemp("pristine")
    db = one_run_of_add(folder)
    with SQLiteStore(db) as store:
        store.compact(SID, [*store.load(SID)])
        store.append_many(SID, every_field())
        store.record_events(SID, "r2", [{"type": EFFECT_EVENT, "id": "c2", "name": "add",
                                        "files": [{"path": str(folder / "a.txt"),
                                                   "before": None, "after": "0" * 64}]}])
    return db


def every_field() -> list[Message]:
    """Messages holding between them every field a message stores."""
    second = ToolCall(id="c2", name="add", arguments='{"a": 1}')
    return [Message(role="user", content="and this?", attachments=[image(PNG)]),
            Message(role="assistant", reasoning="look first", tool_calls=[second],
                    provider_data={"anthropic": {"signature": "s1"}}),
            Message(role="tool", content="missing b", tool_call_id="c2", name="add",
                    is_error=True, marks=frozenset({"runtime_note"})),
            Message(role="assistant", content="b is missing")]


def copied(source: Path, target: Path, *statements: str) -> Path:
    """`target`: a copy of `source` (with what its write-ahead log holds) changed by
    `statements`."""
    with sqlite3.connect(source) as original, sqlite3.connect(target) as copy_:
        original.backup(copy_)
    with sqlite3.connect(target) as conn:
        for statement in statements:
            conn.execute(statement)
    return target


def live_messages(db: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """(row id, role, data) of each message of the session's live epoch."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT m.id, m.role, m.data FROM messages m JOIN sessions s ON "
                            "s.id = m.session_id AND s.epoch = m.epoch ORDER BY m.id").fetchall()
    return [(rowid, role, json.loads(data)) for rowid, role, data in rows]


# -- each message's JSON of another shape --

def other_type(value: Any) -> Any:
    """A value of another JSON type, one a lenient reader would take (a flag as "false")."""
    if isinstance(value, bool):
        return "false" if value else "true"
    if isinstance(value, str):
        return 7
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return {str(n): item for n, item in enumerate(value)}
    return [value]


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into `value` (a provider's blocks are opaque: any JSON is theirs)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        yield (*at, key)
        if key != "provider_data":
            yield from paths(item, (*at, key))


def at_path(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def sql_text(value: Any) -> str:
    """`value` as JSON in an SQL string literal."""
    return "'" + json.dumps(value).replace("'", "''") + "'"


def changed(fields: dict[str, Any], path: tuple[Any, ...], new: Any, *, drop: bool = False
            ) -> dict[str, Any]:
    out = copy.deepcopy(fields)
    holder = out
    for key in path[:-1]:
        holder = holder[key]
    if drop:
        del holder[path[-1]]
    else:
        holder[path[-1]] = new
    return out


# keys `Message.to_dict` writes whenever the thing they are in exists
REQUIRED = {("tool_calls", "id"), ("tool_calls", "name"), ("tool_calls", "arguments"),
            ("attachments", "kind"), ("attachments", "media_type"), ("attachments", "base64")}


def shape_damages(role: str, fields: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "a key loopwright never writes", {**fields, "priority": "high"}
    if role == "tool":
        yield "no tool_call_id", changed(fields, ("tool_call_id",), None, drop=True)
    for path in paths(fields):
        value = at_path(fields, path)
        yield f"{path} of another type", changed(fields, path, other_type(value))
        if isinstance(value, dict) and path[0] != "provider_data":
            yield f"{path} with a key never written", changed(fields, (*path, "x"), 1)
        if (path[0], path[-1]) in REQUIRED and len(path) == 3:
            yield f"no {path}", changed(fields, path, None, drop=True)


def test_a_message_of_another_shape_never_reaches_the_model(pristine: Path,
                                                            tmp_path: Path) -> None:
    failures = []
    rng = random.Random(f"{SEED}:shapes")
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        for rowid, role, fields in live_messages(pristine):
            for what, damaged in shape_damages(role, fields):
                db = copied(pristine, tmp_path / f"{rowid}.db",
                            f"UPDATE messages SET data = {sql_text(damaged)} "
                            f"WHERE id = {rowid}")
                where = f"message row {rowid} ({role}), {what}"
                problems = [asyncio.run(resume(db, server, refused=True))]
                if rng.random() < 1 / 3:  # the CLI reads through the same decoder
                    problems.append(cli_at(str(db), *rng.choice([SHOW_ALL, ("export", SID)])))
                failures += [f"{where}: {problem}" for problem in problems if problem]
                db.unlink()
    assert not failures, "\n".join(failures)


async def pg_session(server: str) -> str:
    """A fresh PostgreSQL database holding session SID with `every_field`; its DSN."""
    from loopwright.store import open_store
    from pg_server import fresh_database

    dsn = fresh_database(server)
    store = open_store(dsn)
    assert store is not None
    try:
        await store.create(SID)
        await store.append_many(SID, every_field())
    finally:
        await store.aclose()
    return dsn


@pytest.mark.parametrize("damage", ["DELETE FROM messages WHERE seq = 3",
                                    "UPDATE messages SET seq = seq + 10 WHERE seq = 4"])
async def test_a_message_row_lost_on_postgresql_is_refused(postgres_server: str,
                                                           damage: str) -> None:
    import psycopg

    dsn = await pg_session(postgres_server)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(damage)
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        assert await resume(dsn, server, refused=True) is None


async def test_a_message_of_another_shape_never_reaches_the_model_on_postgresql(
        postgres_server: str) -> None:
    """The same damages, drawn with the seed, in a real PostgreSQL database (its rows are read
    by the same decoder: `store/rows.py`)."""
    import psycopg

    dsn = await pg_session(postgres_server)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT seq, role, data FROM messages ORDER BY seq").fetchall()
    cases = [(seq, role, data, what, damaged) for seq, role, data in rows
             for what, damaged in shape_damages(role, json.loads(data))]
    failures = []
    with FakeModelServer([Reply("ok")], repeat=True) as server, \
            psycopg.connect(dsn, autocommit=True) as conn:
        for seq, role, data, what, damaged in random.Random(f"{SEED}:pg").sample(cases, 12):
            conn.execute("UPDATE messages SET data = %s WHERE seq = %s",
                         (json.dumps(damaged), seq))
            problem = await resume(dsn, server, refused=True)
            if problem:
                failures.append(f"message {seq} ({role}), {what}: {problem}")
            conn.execute("UPDATE messages SET data = %s WHERE seq = %s", (data, seq))
    assert not failures, "\n".join(failures)


# -- message rows moved, lost or copied --

ROW_DAMAGES = {
    "a negative seq": "UPDATE messages SET seq = -5 WHERE id = {last}",
    "a seq taken twice": "UPDATE messages SET seq = seq - 1 WHERE id = {last}",
    "a row lost": "DELETE FROM messages WHERE id = {last} - 1",
    "a row copied after the last": "INSERT INTO messages SELECT id + 2, session_id, epoch, "
                                   "seq, role, content, data, created FROM messages "
                                   "WHERE id = {last} - 1",
    "a row copied far past the last": "INSERT INTO messages SELECT id + 100, session_id, epoch, "
                                      "seq + 100, role, content, data, created FROM messages "
                                      "WHERE id = {last} - 2",
    "a row of another session": "UPDATE messages SET session_id = 'other' WHERE id = {last}",
    "two rows swapped": "UPDATE messages SET id = CASE id WHEN {last} THEN {last} - 1 ELSE "
                        "{last} END WHERE id IN ({last}, {last} - 1)",
}


@pytest.mark.parametrize("damage", sorted(ROW_DAMAGES))
async def test_message_rows_moved_lost_or_copied_are_refused(
        pristine: Path, tmp_path: Path, damage: str) -> None:
    last = live_messages(pristine)[-1][0]
    statements = ["PRAGMA foreign_keys = OFF", "DROP TRIGGER IF EXISTS messages_fts_delete",
                  ROW_DAMAGES[damage].format(last=last)]
    if damage == "two rows swapped":  # through a free key: the keys are unique
        statements[-1:] = [f"UPDATE messages SET id = -1 WHERE id = {last}",
                           f"UPDATE messages SET id = {last} WHERE id = {last} - 1",
                           f"UPDATE messages SET id = {last} - 1 WHERE id = -1"]
    db = copied(pristine, tmp_path / "s.db", *statements)
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        problems = [await resume(db, server, refused=True), cli_at(str(db), *SHOW_ALL)]
    assert problems == [None, None]


# -- text that is not UTF-8, in every text column --

def text_columns(db: Path) -> Iterator[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        for table in ("sessions", "messages", "events", "runs"):
            for row in conn.execute(f"PRAGMA table_info({table})"):
                if row[2].upper() == "TEXT":
                    yield table, row[1]


def test_text_that_is_not_utf8_is_a_damaged_row(pristine: Path, tmp_path: Path) -> None:
    """In any text column of any row: the row is damaged, named with its session (a listing
    skips its session and names it); it failed the whole read naming no session before."""
    failures = []
    rng = random.Random(f"{SEED}:utf8")
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        for table, column in text_columns(pristine):
            with sqlite3.connect(pristine) as conn:
                rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
            rowid = rng.choice(rowids)
            db = copied(pristine, tmp_path / f"{table}.{column}.db", "PRAGMA foreign_keys = OFF",
                        f"UPDATE {table} SET {column} = {NOT_UTF8} WHERE rowid = {rowid}")
            where = f"{table}.{column} (row {rowid})"
            problems = [asyncio.run(resume(db, server)), cli_at(str(db), *rng.choice(
                [SHOW_ALL, SHOW_ALL, ("list",), ("search", "add")]))]
            failures += [f"{where}: {problem}" for problem in problems if problem]
            db.unlink()
    assert not failures, "\n".join(failures)


def test_a_session_whose_title_is_not_utf8_is_skipped_by_the_listing_and_named(
        pristine: Path, tmp_path: Path) -> None:
    db = copied(pristine, tmp_path / "s.db", f"UPDATE sessions SET title = {NOT_UTF8}")
    runner = CliRunner()
    from loopwright.cli.main import app

    result = runner.invoke(app, ["sessions", "list", "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    last = json.loads(result.stdout.splitlines()[-1])
    assert [one["id"] for one in last["damaged"]] == [SID]
    assert "title" in last["damaged"][0]["error"]


@pytest.mark.parametrize("command", [("export", SID), SHOW_ALL])
def test_a_system_prompt_that_is_not_utf8_is_a_damaged_row(pristine: Path, tmp_path: Path,
                                                           command: tuple[str, ...]) -> None:
    """Read as bytes (the store's text factory), it reached export's JSON encoder raw."""
    from loopwright.cli.main import app

    db = copied(pristine, tmp_path / "s.db", f"UPDATE sessions SET system_prompt = {NOT_UTF8}")
    result = CliRunner().invoke(app, ["sessions", *command, "--db", str(db)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit | None), result.exception
    assert "system_prompt" in result.output and f"sessions rm {SID}" in result.output


async def test_a_resumed_message_that_is_not_utf8_names_the_session(pristine: Path,
                                                                    tmp_path: Path) -> None:
    db = copied(pristine, tmp_path / "s.db",
                f"UPDATE messages SET content = {NOT_UTF8} WHERE role = 'tool'")
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        assert await resume(db, server, refused=True) is None


@pytest.mark.parametrize("table", ["messages", "events"])
async def test_json_nested_past_the_parsers_depth_is_a_damaged_row(
        pristine: Path, tmp_path: Path, table: str) -> None:
    """`json` gives up on it with a RecursionError, not a ValueError."""
    db = copied(pristine, tmp_path / "s.db", f"UPDATE {table} SET data = '{'[' * 100_000}' "
                f"WHERE id = (SELECT max(id) FROM {table})")
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        problems = [await resume(db, server, refused=table == "messages"),
                    cli_at(str(db), *SHOW_ALL)]
    assert problems == [None, None]


# -- events of unknown types and odd shapes --

def event_damages(db: Path) -> Iterator[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, data FROM events").fetchall()
    for rowid, data in rows:
        found = json.loads(data)
        for event in (found if isinstance(found, list) else [found]):
            kind = event.get("type")
            future = sql_text({**event, "type": "from_the_future"})
            yield f"an event of type {kind} from the future", (
                f"UPDATE events SET type = 'from_the_future', data = {future} "
                f"WHERE id = {rowid}")
            for path in paths(event):
                new = sql_text(changed(event, path, other_type(at_path(event, path))))
                yield f"event {rowid} {kind}: {path} of another type", (
                    f"UPDATE events SET data = {new} WHERE id = {rowid}")


def test_events_of_unknown_types_and_odd_shapes_are_read_or_refused(
        pristine: Path, tmp_path: Path) -> None:
    failures = []
    rng = random.Random(f"{SEED}:events")
    cases = list(event_damages(pristine))
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        for n, (what, statement) in enumerate(rng.sample(cases, min(20, len(cases)))):
            db = copied(pristine, tmp_path / f"{n}.db", statement)
            problems = [cli_at(str(db), *SHOW_ALL), asyncio.run(resume(db, server))]
            failures += [f"{what}: {problem}" for problem in problems if problem]
            db.unlink()
    assert not failures, "\n".join(failures)


# -- the file itself --

def tables_and_a_column_of_each(db: Path) -> Iterator[tuple[str, str]]:
    rng = random.Random(f"{SEED}:schema")
    with sqlite3.connect(db) as conn:
        for table in ("sessions", "messages", "events", "runs"):
            yield f"no table {table}", f"DROP TABLE {table}"
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if not r[5]]
            column = rng.choice(columns)
            yield f"no column {table}.{column}", f"ALTER TABLE {table} DROP COLUMN {column}"


def test_a_table_or_column_gone_says_the_file_is_damaged(pristine: Path, tmp_path: Path
                                                          ) -> None:
    failures = []
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        for n, (what, statement) in enumerate(tables_and_a_column_of_each(pristine)):
            try:
                db = copied(pristine, tmp_path / f"{n}.db", "PRAGMA foreign_keys = OFF",
                            "DROP TRIGGER IF EXISTS messages_fts_delete",
                            "DROP TRIGGER IF EXISTS messages_fts_insert", statement)
            except sqlite3.OperationalError:  # a column an index or a view needs
                continue
            problems = [cli_at(str(db), *args) for args in (SHOW_ALL, ("list",))]
            failures += [f"{what}: {problem}" for problem in problems if problem]
            said = resumed_error(db, server)  # the file is damaged, not one session
            if "move it aside" not in said:
                failures.append(f"{what}: resume: {said}")
    assert not failures, "\n".join(failures)


def resumed_error(db: Path, server: FakeModelServer) -> str:
    from loopwright.errors import SessionError

    try:
        asyncio.run(Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                          session_id=SID, tools=[add], workdir=str(db.parent)).run(""))
    except SessionError as exc:
        return str(exc)
    return "resumed"


def test_a_schema_from_the_future_is_refused(pristine: Path, tmp_path: Path) -> None:
    db = copied(pristine, tmp_path / "s.db", "PRAGMA user_version = 99")
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        assert "newer than this loopwright" in resumed_error(db, server)
    assert cli_at(str(db), *SHOW_ALL) is None


def cli_process(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`loopwright sessions ARGS --db DB` as a process of its own (a hang ends the test)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWRIGHT_", "XDG_"))}
    return subprocess.run([sys.executable, "-m", "loopwright", "sessions", *args, "--db", db],
                          capture_output=True, text=True, timeout=30, env=env, check=False)


@pytest.mark.parametrize("kind", ["a link to /dev/zero", "a pipe"])
def test_a_database_that_is_a_device_or_a_pipe_is_refused_at_once(tmp_path: Path,
                                                                  kind: str) -> None:
    db = tmp_path / "s.db"
    if kind == "a pipe":
        os.mkfifo(db)
    else:
        db.symlink_to("/dev/zero")
    for args in (("list",), ("show", SID), ("search", "add")):
        done = cli_process(str(db), *args)
        assert done.returncode == 1, done.stderr
        assert "not a session database" in done.stderr and "Traceback" not in done.stderr
    with FakeModelServer([Reply("ok")], repeat=True) as server:
        assert "not a session database" in resumed_error(db, server)
