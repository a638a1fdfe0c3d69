"""Schema v5 (issue 30 item 5): message text is indexed for search in bulk (before a search,
when a run ends), not by a trigger on every insert, and `sessions.updated` is set by the store.
A database made by the v4 schema opens, keeps its index and finds new messages; the index stays
consistent through deletes, including when a later message takes a deleted one's id."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from loopwright import Agent
from loopwright.messages import assistant, user
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import schema_file


def v4_database(path: Path) -> None:
    """A session file as the v4 schema (main before this change) made it, with one indexed
    message written through its triggers."""
    db = schema_file(path, 4)
    db.execute("INSERT INTO sessions (id, title, model, cwd, created, updated) "
               "VALUES ('old', 't', 'm', '/', 0, 0)")
    db.execute("INSERT INTO messages (session_id, seq, role, content, data, created) "
               "VALUES ('old', 1, 'user', 'the walrus migrates', '{}', 1)")
    db.commit()
    db.close()


def words(store: SQLiteStore, text: str) -> list[tuple[str, int]]:
    return [(hit.session_id, hit.seq) for hit in store.search(text)]


def test_a_v4_database_migrates_keeps_its_index_and_finds_new_messages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    v4_database(path)
    with SQLiteStore(path) as store:
        assert words(store, "walrus") == [("old", 1)]
        store.append_many("old", [user("a pelican arrives")])
        assert words(store, "pelican") == [("old", 2)]
        assert words(store, "walrus") == [("old", 1)]  # indexed once, not twice
        info = store.get("old")
        assert info is not None and info.updated > 0  # the store set it, not a trigger
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = "
                      "'messages_fts_insert'").fetchone()[0] == 0


def test_messages_are_not_indexed_per_insert_but_before_a_search(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s")
        store.append_many("s", [user("first heron"), assistant("second heron")])
        indexed = store._db.execute("SELECT count(*) FROM messages_fts_docsize").fetchone()[0]
        assert indexed == 0
        assert words(store, "heron") != [] and len(words(store, "heron")) == 2
        assert store._db.execute("SELECT indexed FROM sessions").fetchone()[0] == 2


async def test_a_run_that_ends_leaves_its_messages_indexed(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with FakeModelServer([Reply("the otter answer")]) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=str(path),
                      session_id="ran")
        await agent.run("tell me of otters")
        await agent.aclose()
    db = sqlite3.connect(path)
    indexed = db.execute("SELECT indexed FROM sessions WHERE id = 'ran'").fetchone()[0]
    assert indexed == db.execute("SELECT max(seq) FROM messages").fetchone()[0] == 2
    hits = db.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'otter'").fetchall()
    assert len(hits) == 2  # the prompt and the answer, found without a search catching up


def test_deleting_a_session_keeps_the_index_consistent_when_ids_are_taken_again(
        tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("keep")
        store.append_many("keep", [user("a quiet badger")])
        store.create("gone")
        store.append_many("gone", [user("a loud badger"), user("a louder badger")])
        assert len(words(store, "badger")) == 3  # everything indexed
        store.delete("gone")  # its two messages leave the index
        assert store._db.execute("SELECT count(*) FROM messages_fts_docsize").fetchone()[0] == 1
        store.create("new")  # takes gone's number, so its message takes gone's first key
        store.append_many("new", [user("a new badger")])  # not indexed yet
        assert sorted(words(store, "badger")) == [("keep", 1), ("new", 1)]
        store.delete("new")  # an unindexed message leaves nothing behind in the index
        store.append_many("keep", [user("another badger")])
        assert sorted(words(store, "badger")) == [("keep", 1), ("keep", 2)]
        check = store._db.execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        assert check is not None  # raises on an index out of step with its content
