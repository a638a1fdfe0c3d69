"""Two damages found by sweeping every column of a PostgreSQL session store: an event row whose
JSON is an object of no type (`sessions show --events` raised KeyError), and a schema version
that is not the one the tables have (-1 or 0: the migrations ran again over the tables and
PostgreSQL's DuplicateTable / DuplicateColumn came out of every read and of a resume). Each is
now a clear error naming what is damaged; an undamaged store still reads and resumes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import pytest
from damage_helpers import SID, add, one_run_of_add
from typer.testing import CliRunner, Result

from loopwright import Agent
from loopwright.errors import SessionError
from loopwright.testing import FakeModelServer, Reply, call


def sessions_cli(db: str, *args: str) -> Result:
    from loopwright.cli.main import app

    env: dict[str, str | None] = {key: None for key in os.environ
                                  if key.startswith(("LOOPWRIGHT_", "XDG_"))}
    return CliRunner().invoke(app, ["sessions", *args, "--db", db], env=env)


async def one_run_on(store_spec: str, tmp_path: Path) -> str:
    """Session SID after a run that called `add`, in `store_spec`'s store; where it is."""
    if not store_spec.startswith("postgresql://"):
        return str(await asyncio.to_thread(one_run_of_add, tmp_path))
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("5")]
    with FakeModelServer(script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store_spec,
                      session_id=SID, tools=[add])
        await agent.run("add 2 and 3")
        await agent.aclose()
    return store_spec


def execute(db: str, statement: str) -> None:
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(statement.encode())
        return
    with sqlite3.connect(db) as conn:
        conn.execute(statement)


@pytest.mark.timeout(60)
async def test_an_event_of_no_type_is_a_damaged_row(store_spec: str, tmp_path: Path) -> None:
    db = await one_run_on(store_spec, tmp_path)
    shown = sessions_cli(db, "show", SID, "--events")
    assert shown.exit_code == 0 and "add" in shown.output, shown.output  # read as it is
    execute(db, """UPDATE events SET data = '{"a": 1}'""")
    shown = sessions_cli(db, "show", SID, "--events")
    assert not isinstance(shown.exception, KeyError), shown.exception
    assert shown.exit_code == 1
    assert f"session {SID}: an event of run" in shown.output and "is damaged" in shown.output


@pytest.mark.timeout(60)
@pytest.mark.parametrize("version", [-1, 0])
async def test_a_postgresql_schema_version_its_tables_are_not_is_refused(
        postgres_server: str, tmp_path: Path, version: int) -> None:
    from pg_server import fresh_database

    db = await one_run_on(fresh_database(postgres_server), tmp_path)
    execute(db, f"UPDATE loopwright_schema SET version = {version}")
    for args in (("list",), ("show", SID), ("export", SID), ("search", "add")):
        result = sessions_cli(db, *args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), \
            (args, result.exception)
        assert "its session schema says v" in result.output, result.output
    with FakeModelServer([Reply("ok")], strict=False) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                      session_id=SID)
        with pytest.raises(SessionError, match="its session schema says v"):
            await agent.run("and now?")
        await agent.aclose()
    assert server.model_requests == []


@pytest.mark.timeout(60)
async def test_a_postgresql_database_of_other_tables_is_refused(postgres_server: str) -> None:
    """A database holding another program's `sessions` table, and no schema version."""
    from pg_server import fresh_database

    db = fresh_database(postgres_server)
    execute(db, "CREATE TABLE sessions (name TEXT)")
    result = sessions_cli(db, "list")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert "its session schema says v0" in result.output, result.output
