"""One damaged session must not hide the others (issue 30 item 4): listing and search skip a
session whose row is damaged and report it once — into a `damaged` list the caller passes, else
as a `DamagedSessionWarning` — on SQLite and a real PostgreSQL alike, with `limit` counting only
the sessions that can be read. `loopwright sessions list`/`search` print the good ones and one
line on stderr per damaged one (exit 0); `sessions show` of the damaged one stays an error."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from loopwright.errors import SessionError
from loopwright.messages import user
from loopwright.store import open_store
from loopwright.store.rows import DamagedSession, DamagedSessionWarning

COUNT = 6  # sessions s0 (oldest) to s5 (newest)
NEWEST_FIRST = [f"s{i}" for i in reversed(range(COUNT))]
# a sessions row neither store can hold as loopwright wrote it: a negative epoch (a count), or
# a negative `updated` (a time; the search reads it with each hit)
DAMAGE_EPOCH = "UPDATE sessions SET epoch = -1 WHERE id = %s"
DAMAGE_UPDATED = "UPDATE sessions SET updated = -1 WHERE id = %s"


async def stored_sessions(store_spec: str) -> None:
    """COUNT sessions, each with one message naming a fruit, updated one second apart."""
    store = open_store(store_spec)
    assert store is not None
    try:
        for i in range(COUNT):
            await store.create(f"s{i}", title=f"session {i}")
            await store.append_many(f"s{i}", [user(f"an apple, number {i}")])
    finally:
        await store.aclose()
    for i in range(COUNT):
        execute(store_spec, "UPDATE sessions SET updated = %s WHERE id = %s", 1000.0 + i, f"s{i}")


def execute(store_spec: str, sql: str, *params: Any) -> None:
    if store_spec.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_spec, autocommit=True) as conn:
            conn.execute(sql, params)
    else:
        import sqlite3

        with sqlite3.connect(store_spec) as db:
            db.execute(sql.replace("%s", "?"), params)


async def listed(store_spec: str, limit: int = 20) -> tuple[list[str], list[DamagedSession]]:
    store = open_store(store_spec)
    assert store is not None
    damaged: list[DamagedSession] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # with a list to report into, nothing is warned
            found = await store.list_sessions(limit=limit, damaged=damaged)
    finally:
        await store.aclose()
    return [info.id for info in found], damaged


@pytest.mark.parametrize("broken", [["s3"], ["s5"], ["s0"], ["s5", "s2"]],
                         ids=["middle", "newest", "oldest", "two"])
async def test_a_damaged_session_is_skipped_and_reported_the_rest_listed_in_order(
        store_spec: str, broken: list[str]) -> None:
    await stored_sessions(store_spec)
    for sid in broken:
        execute(store_spec, DAMAGE_EPOCH, sid)

    ids, damaged = await listed(store_spec)

    assert ids == [sid for sid in NEWEST_FIRST if sid not in broken]
    assert [one.session_id for one in damaged] == broken  # once each, newest first
    for one in damaged:
        assert "damaged" in one.error and f"loopwright sessions rm {one.session_id}" in one.error


@pytest.mark.parametrize(("broken", "limit", "expected", "reported"), [
    (["s4"], 3, ["s5", "s3", "s2"], ["s4"]),
    (["s5", "s4"], 4, ["s3", "s2", "s1", "s0"], ["s5", "s4"]),  # read past both
    (["s0"], 5, ["s5", "s4", "s3", "s2", "s1"], []),  # past the limit: never read
])
async def test_limit_counts_only_the_sessions_that_can_be_read(
        store_spec: str, broken: list[str], limit: int, expected: list[str],
        reported: list[str]) -> None:
    await stored_sessions(store_spec)
    for sid in broken:
        execute(store_spec, DAMAGE_EPOCH, sid)
    ids, damaged = await listed(store_spec, limit=limit)
    assert ids == expected
    assert [one.session_id for one in damaged] == reported


async def test_with_nothing_damaged_nothing_is_reported(store_spec: str) -> None:
    await stored_sessions(store_spec)
    assert await listed(store_spec) == (NEWEST_FIRST, [])
    assert await listed(store_spec, limit=2) == (NEWEST_FIRST[:2], [])


async def test_a_caller_passing_no_list_gets_the_good_sessions_and_a_warning(
        store_spec: str) -> None:
    await stored_sessions(store_spec)
    execute(store_spec, DAMAGE_EPOCH, "s3")
    store = open_store(store_spec)
    assert store is not None
    try:
        with pytest.warns(DamagedSessionWarning, match="session s3") as warned:
            found = await store.list_sessions()
        assert [info.id for info in found] == [s for s in NEWEST_FIRST if s != "s3"]
        assert len(warned) == 1
        with pytest.raises(SessionError, match="session s3"):  # reading it alone still fails
            await store.get("s3")
    finally:
        await store.aclose()


async def test_search_skips_a_damaged_session_it_hits(store_spec: str) -> None:
    await stored_sessions(store_spec)
    execute(store_spec, DAMAGE_UPDATED, "s2")
    store = open_store(store_spec)
    assert store is not None
    damaged: list[DamagedSession] = []
    try:
        hits = await store.search("apple", limit=20, damaged=damaged)
        assert sorted(hit.session_id for hit in hits) == sorted(
            s for s in NEWEST_FIRST if s != "s2")
        assert [one.session_id for one in damaged] == ["s2"]
        damaged.clear()
        assert len(await store.search("apple", limit=3, damaged=damaged)) == 3
        # the one message of s2 matches alone: nothing comes back but the damage
        damaged.clear()
        assert await store.search("number 2", damaged=damaged) == []
        assert [one.session_id for one in damaged] == ["s2"]
    finally:
        await store.aclose()


def sessions_cli(store_spec: str, *args: str) -> Result:
    from loopwright.cli.main import app

    env: dict[str, str | None] = {key: None for key in os.environ
                                  if key.startswith(("LOOPWRIGHT_", "XDG_"))}
    return CliRunner().invoke(app, ["sessions", *args, "--db", store_spec], env=env)


async def test_cli_lists_the_good_sessions_and_names_the_damaged_one_on_stderr(
        store_spec: str) -> None:
    await stored_sessions(store_spec)
    execute(store_spec, DAMAGE_EPOCH, "s3")

    result = sessions_cli(store_spec, "list")
    assert result.exit_code == 0, result.output
    for sid in NEWEST_FIRST:
        assert (f"session {sid[1]}" in result.stdout) == (sid != "s3"), result.stdout
    (line,) = result.stderr.splitlines()
    assert "s3" in line and "loopwright sessions rm s3" in line
    assert "Traceback" not in result.output

    result = sessions_cli(store_spec, "list", "--json")
    assert result.exit_code == 0, result.output
    *sessions, last = [json.loads(line) for line in result.stdout.splitlines()]
    assert [s["id"] for s in sessions] == [s for s in NEWEST_FIRST if s != "s3"]
    assert [one["id"] for one in last["damaged"]] == ["s3"]

    result = sessions_cli(store_spec, "show", "s3")
    assert result.exit_code == 1 and "session s3" in result.output


async def test_cli_search_shows_the_other_hits_and_names_the_damaged_one(
        store_spec: str) -> None:
    await stored_sessions(store_spec)
    execute(store_spec, DAMAGE_UPDATED, "s2")
    result = sessions_cli(store_spec, "search", "apple")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("apple") == COUNT - 1, result.stdout
    (line,) = result.stderr.splitlines()
    assert "s2" in line and "damaged" in line

    clean = sessions_cli(store_spec, "search", "number 3")  # the rule must not fire
    assert clean.exit_code == 0 and clean.stderr == "" and "apple" in clean.stdout
