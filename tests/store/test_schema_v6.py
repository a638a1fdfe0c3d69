"""Schema v6 (issue 30 item 5): a turn's transaction writes fewer B-trees: `turns` is one (WITHOUT
ROWID) and `messages` has one index for both of its orders. A database the v5 schema made opens
with every session, epoch, search hit and turn it had, and goes on numbering and indexing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from loopwright.messages import Usage, assistant, user
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from shared_helpers import schema_file, search_hits


def v5_database(path: Path) -> None:
    """A file as the v5 schema made it: a session compacted once (two epochs), its first
    messages indexed for search and the newest not yet, two turns recorded."""
    db = schema_file(path, 5)
    db.execute("INSERT INTO sessions (id, title, model, cwd, created, updated, epoch) "
               "VALUES ('old', 't', 'm', '/', 0, 0, 1)")
    rows = [(1, 0, "user", "the walrus migrates"), (2, 0, "assistant", "walrus noted"),
            (3, 1, "user", "summary of the walrus"), (4, 1, "assistant", "a heron lands")]
    db.executemany("INSERT INTO messages (session_id, seq, epoch, role, content, data, created)"
                   " VALUES ('old', ?, ?, ?, ?, '{}', ?)",
                   [(seq, epoch, role, text, float(seq)) for seq, epoch, role, text in rows])
    db.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages "
               "WHERE id <= 3")
    db.execute("UPDATE fts_progress SET upto = 3")
    db.executemany("INSERT INTO turns (session_id, run_id, turn, created, input_tokens) "
                   "VALUES ('old', 'r1', ?, ?, ?)", [(1, 10.0, 100), (2, 11.0, 200)])
    db.commit()
    db.close()


def test_a_v5_database_migrates_with_every_message_hit_and_turn(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    v5_database(path)
    with SQLiteStore(path) as store:
        assert [m.content for m in store.load("old")] == ["summary of the walrus",
                                                          "a heron lands"]
        assert [(e.epoch, e.messages) for e in store.lineage("old")] == [(0, 2), (1, 2)]
        assert search_hits(store, "walrus") == [("old", 1), ("old", 2), ("old", 3)]
        assert search_hits(store, "heron") == [("old", 4)]  # the one not indexed yet is caught up
        assert [(t["turn"], t["input_tokens"]) for t in store.turns("old")] == [(1, 100),
                                                                               (2, 200)]
        store.append_many("old", [user("a pelican arrives")])
        assert [m.content for m in store.load_page("old", offset=2)] == ["a pelican arrives"]
        assert search_hits(store, "pelican") == [("old", 5)]  # numbered on from the newest epoch
        store.record_turn("old", "r1", 2, Usage(input_tokens=250), None)  # replaces turn 2
        assert [t["input_tokens"] for t in store.turns("old")] == [100, 250]
        store.compact("old", [user("second summary")])
        assert [m.content for m in store.load("old")] == ["second summary"]
        store.delete("old")
        assert store.search("walrus") == [] and store.search("pelican") == []
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM messages_fts_docsize").fetchone()[0] == 0


def test_a_turn_writes_no_b_tree_for_turns_and_one_for_messages(tmp_path: Path) -> None:
    """What a turn's transaction touches, on a new file and on a migrated one alike (since
    v8 no table of turns: a turn's record is its turn_end event, tests/store/test_schema_v8.py;
    since v9 no index of messages: a session's messages are a range of the table's keys,
    tests/store/test_schema_v9.py)."""
    v5_database(tmp_path / "v5.db")
    for path in (tmp_path / "new.db", tmp_path / "v5.db"):
        SQLiteStore(path).close()
        db = sqlite3.connect(path)
        assert [row[1] for row in db.execute("PRAGMA index_list(messages)")] == []
        assert db.execute("SELECT sql FROM sqlite_master WHERE name = 'turns'").fetchone() is None
        db.close()


def test_messages_keep_their_order_across_epochs_after_the_migration(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s")
        store.append_many("s", [user("one"), assistant("two")])
        store.compact("s", [user("summary")])
        store.append_many("s", [assistant("three")])
        rows = store._db.execute("SELECT epoch, seq FROM messages WHERE session_id = 's' "
                                 "ORDER BY id").fetchall()
    assert rows == [(0, 1), (0, 2), (1, 3), (1, 4)]
