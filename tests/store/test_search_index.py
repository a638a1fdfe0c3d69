"""Schema v5 (issue 30 item 5): message text is indexed for search in bulk, when a search
runs (not by a trigger on every insert, nor when a run ends), and `sessions.updated` is set by
the store.
A database made by the v4 schema opens, keeps its index and finds new messages; the index stays
consistent through deletes, including when a later message takes a deleted one's id."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from loopwright import Agent
from loopwright.messages import assistant, user
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.writes import AppendMessages
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


async def test_a_run_writes_nothing_to_the_search_index_and_a_search_finds_it(
        tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with FakeModelServer([Reply("the otter answer")]) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", store=str(path),
                      session_id="ran")
        await agent.run("tell me of otters")
        await agent.aclose()
    db = sqlite3.connect(path)
    assert db.execute("SELECT indexed FROM sessions WHERE id = 'ran'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM messages_fts_docsize").fetchone()[0] == 0
    db.close()
    with SQLiteStore(path) as store:  # the search catches the index up first
        assert words(store, "otter") == [("ran", 2), ("ran", 1)]
        assert store._db.execute("SELECT indexed FROM sessions").fetchone()[0] == 2


def hits(store: SQLiteStore, text: str, **options: Any) -> list[tuple[Any, ...]]:
    return [(h.session_id, h.seq, h.role, h.snippet, h.score, h.title) for h in
            store.search(text, **options)]


def test_a_search_caught_up_between_runs_finds_what_a_whole_index_finds(
        tmp_path: Path) -> None:
    """Runs on one session with searches between them (the index caught up part way each
    time), a compaction, and a run cut off before its end: every search gives what an index
    built from scratch over the same messages gives."""
    caught_up, whole = tmp_path / "caught_up.db", tmp_path / "whole.db"
    with SQLiteStore(caught_up) as store:
        store.open_session("s", "run-1")
        store.open_session("other", "run-9")
        store.write_batch("s", [AppendMessages(messages=[user("the heron waits"),
                                                assistant("a heron and a stork")])])
        assert len(hits(store, "heron")) == 2  # indexed up to here
        store.write_batch("other", [AppendMessages(messages=[user("one stork, no heron")])])
        store.write_batch("s", [AppendMessages(messages=[user("where is the stork"),
                                                assistant("by the heron pond")])])
        assert store.compact("s", [user("summary: herons and storks"),
                                   assistant("noted, heron")]) == 1
        assert len(hits(store, "stork")) == 4
        # a run cut off: its messages written, the run never ended
        store.write_batch("s", [AppendMessages(messages=[user("a last heron, never answered")])])
        caught = {text: hits(store, text) for text in ("heron", "stork", "pond heron")}
        caught["any"] = hits(store, "pond stork", any_word=True)
        caught["exclude"] = hits(store, "heron", exclude_session="other")
    shutil.copy(caught_up, whole)
    db = sqlite3.connect(whole)
    db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")
    db.execute("UPDATE sessions SET indexed = (SELECT max(seq) FROM messages m "
               "WHERE m.session_id = sessions.id)")
    db.commit()
    db.close()
    with SQLiteStore(whole) as store:
        assert {text: hits(store, text) for text in ("heron", "stork", "pond heron")} == {
            text: found for text, found in caught.items() if text not in ("any", "exclude")}
        assert hits(store, "pond stork", any_word=True) == caught["any"]
        assert hits(store, "heron", exclude_session="other") == caught["exclude"]
    assert len(caught["heron"]) == 7 and len(caught["exclude"]) == 6


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
