"""Schema v9 (issue 30 item 5): a turn's transaction writes two B-trees fewer. A session's messages
and events are keyed by its number (`(num << 32) + n`, `store/sqlite_rows.py`), so they need no
index of their own: a reader takes a range of the table's keys. A database the v8 schema made
opens with every message, epoch, event, model call, turn and search hit it had, in order, and
goes on numbering, indexing and deleting."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from loopwright.errors import SessionError
from loopwright.messages import Usage, assistant, user
from loopwright.store.schema import SCHEMA_VERSION
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.writes import AppendMessages, RecordEvents
from shared_helpers import run_in_processes, schema_file, search_hits


def v8_database(path: Path) -> None:
    """A file as the v8 schema made it: two sessions written in turns (their rows' ids
    interleaved), one compacted once; messages indexed for search up to id 3; events rows of
    both kinds (a batch, a single event, a turn's record)."""
    db = schema_file(path, 8)
    db.executemany("INSERT INTO sessions (id, title, model, cwd, created, updated, epoch) "
                   "VALUES (?, 't', 'm', '/', 0, 0, ?)", [("a", 1), ("b", 0)])
    rows = [("a", 1, 0, "user", "the walrus migrates"), ("b", 1, 0, "user", "a badger digs"),
            ("a", 2, 0, "assistant", "walrus noted"), ("b", 2, 0, "assistant", "badger seen"),
            ("a", 3, 1, "user", "summary of the walrus"), ("a", 4, 1, "assistant", "a heron")]
    db.executemany("INSERT INTO messages (session_id, seq, epoch, role, content, data, created)"
                   " VALUES (?, ?, ?, ?, ?, '{}', ?)",
                   [(*row, float(n)) for n, row in enumerate(rows)])
    db.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages "
               "WHERE id <= 3")
    db.execute("UPDATE fts_progress SET upto = 3")
    events = [("a", "batch", [{"type": "turn_start", "turn": 1},
                              {"type": "turn_end", "turn": 1, "usage": {"input_tokens": 10}}]),
              ("b", "turn_start", {"type": "turn_start", "turn": 1}),
              ("a", "turn_record", {"type": "turn_end", "turn": 1,
                                    "usage": {"input_tokens": 11}, "cost": 0.25}),
              ("b", "done", {"type": "done"}), ("a", "done", {"type": "done"})]
    db.executemany("INSERT INTO events (session_id, run_id, created, type, data) VALUES "
                   "(?, 'r1', 1.0, ?, ?)",
                   [(sid, kind, json.dumps(data)) for sid, kind, data in events])
    db.commit()
    db.close()


def test_a_v8_database_migrates_with_every_row_in_its_order(tmp_path: Path) -> None:
    path = tmp_path / "v8.db"
    v8_database(path)
    with SQLiteStore(path) as store:
        assert [m.content for m in store.load("a")] == ["summary of the walrus", "a heron"]
        assert [m.content for m in store.load_page("a", epoch=0)] == ["the walrus migrates",
                                                                      "walrus noted"]
        assert [(e.epoch, e.messages) for e in store.lineage("a")] == [(0, 2), (1, 2)]
        assert [m.content for m in store.load("b")] == ["a badger digs", "badger seen"]
        assert store.message_count("a") == 2 and store.message_count("a", epoch=0) == 2
        assert [e["type"] for e in store.events("a")] == ["turn_start", "turn_end", "done"]
        assert [e["type"] for e in store.events("b")] == ["turn_start", "done"]
        assert [(t["turn"], t["input_tokens"], t["cost"]) for t in store.turns("a")] == [
            (1, 11, 0.25)]  # the turn's record replaces its event, as before
        assert search_hits(store, "walrus") == [("a", 1), ("a", 2), ("a", 3)]
        assert search_hits(store, "badger") == [("b", 1), ("b", 2)]  # b's 2nd was not indexed yet
        store.append_many("a", [user("a pelican arrives")])
        assert [m.content for m in store.load_page("a", offset=2)] == ["a pelican arrives"]
        assert search_hits(store, "pelican") == [("a", 5)]  # numbered on from the newest
        store.record_events("b", "r2", [{"type": "turn_start", "turn": 1}])
        assert [e["run_id"] for e in store.events("b")] == ["r1", "r1", "r2"]
        store.delete("a")
        assert search_hits(store, "walrus") == [] and store.events("a") == []
        assert search_hits(store, "badger") == [("b", 1), ("b", 2)]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES "
                      "('integrity-check', 1)") is not None  # raises if out of step


def test_messages_and_events_have_no_index_and_runs_only_its_key(tmp_path: Path) -> None:
    """A turn's commit writes the two tables and no index of them, a run's first write one
    index of runs: on a new file and on a migrated one."""
    v8_database(tmp_path / "v8.db")
    for path in (tmp_path / "new.db", tmp_path / "v8.db"):
        SQLiteStore(path).close()
        db = sqlite3.connect(path)
        for table in ("messages", "events"):
            assert db.execute(f"PRAGMA index_list({table})").fetchall() == [], table
        assert [row[1] for row in db.execute("PRAGMA index_list(runs)")] == [
            "sqlite_autoindex_runs_1"]  # its key, (session_id, id), which readers use
        db.close()


def test_sessions_written_in_turns_keep_their_rows_apart_and_in_order(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        for sid in ("x", "y", "z"):
            store.create(sid)
        for n in range(1, 4):
            for sid in ("z", "x", "y"):
                store.append_many(sid, [user(f"{sid}{n}"), assistant(f"{sid}{n}!")])
                store.record_events(sid, "r", [{"type": "turn_start", "turn": n}])
        store.compact("y", [user("y summary")])
        store.append_many("y", [assistant("y after")])
        for sid in ("x", "z"):
            assert [m.content for m in store.load(sid)] == [
                text for n in range(1, 4) for text in (f"{sid}{n}", f"{sid}{n}!")]
            assert [e["turn"] for e in store.events(sid)] == [1, 2, 3]
        assert [m.content for m in store.load("y")] == ["y summary", "y after"]
        assert [(e.epoch, e.messages) for e in store.lineage("y")] == [(0, 6), (1, 2)]
        store.delete("z")
        store.create("w")  # takes z's number, the highest: none of z's rows shows through
        assert store.load("w") == [] and store.events("w") == []
        assert len(store.load("x")) == 6


def test_a_write_to_a_session_that_does_not_exist_is_a_session_error(tmp_path: Path) -> None:
    """No foreign key stops it any more: the store does, naming the session."""
    with SQLiteStore(tmp_path / "s.db") as store:
        with pytest.raises(SessionError, match="no session 'ghost'"):
            store.append_many("ghost", [user("boo")])
        with pytest.raises(SessionError, match="no session 'ghost'"):
            store.record_events("ghost", "r", [{"type": "done"}])
        assert store._db.execute("SELECT count(*) FROM messages").fetchone()[0] == 0


def test_a_turns_record_takes_its_key_inside_the_write_lock(tmp_path: Path) -> None:
    """`record_turn` reads the session's newest key and writes the next in one transaction:
    read before another connection's write commits, the key was taken twice (an integrity
    error) once that write committed."""
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        store.create("s")
        store.record_events("s", "r", [{"type": "turn_start", "turn": 1}])
        other = sqlite3.connect(path, isolation_level=None)
        (base,) = other.execute("SELECT num << 32 FROM sessions WHERE id = 's'").fetchone()
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO events (id, session_id, run_id, created, type, data) "
                      "VALUES (?, 's', 'r', 1.0, 'turn_start', '{}')", (base + 2,))
        done = threading.Event()

        def record() -> None:
            store.record_turn("s", "r", 1, Usage(input_tokens=3), None)
            done.set()

        writer = threading.Thread(target=record)
        writer.start()
        writer.join(0.3)  # it reads (or waits for the lock) while the other write is open
        other.execute("COMMIT")
        other.close()
        writer.join()
        assert done.is_set()
        assert [t["input_tokens"] for t in store.turns("s")] == [3]


def test_message_counts_equal_the_rows_of_each_epoch(tmp_path: Path) -> None:
    """The live epoch's count is a subtraction of keys (sessions v9 made) or a count of rows
    (a migrated session): both give what counting the rows gives, through compactions, an
    empty epoch included, and in `get` and `list_sessions`."""
    v8_database(tmp_path / "s.db")
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("new")
        store.append_many("new", [user("one"), assistant("two"), user("three")])
        steps = [lambda: None, lambda: store.compact("new", [user("summary")]),
                 lambda: store.append_many("new", [assistant("four")]),
                 lambda: store.compact("new", []),
                 lambda: store.append_many("a", [user("more")])]
        for step in steps:
            step()
            for sid in ("new", "a", "b"):
                rows = store._db.execute(
                    "SELECT epoch, count(*) FROM messages WHERE session_id = ? GROUP BY epoch",
                    (sid,)).fetchall()
                counted = dict(rows)
                info = store.get(sid)
                assert info is not None
                assert store.message_count(sid) == counted.get(info.epoch, 0) == \
                    info.message_count
                assert [store.message_count(sid, epoch=e) for e in counted] == list(
                    counted.values())
        listed = {s.id: s.message_count for s in store.list_sessions()}
        assert listed == {"new": 0, "a": 3, "b": 2}


def _write_sessions(path: str, worker: int, batches: int) -> None:
    """Two sessions made in this process, written batch by batch in turns (as two runs of one
    `serve` would), while other processes do the same to the same file."""
    store = SQLiteStore(path, timeout=60)
    names = [f"p{worker}-{k}" for k in range(2)]
    for name in names:
        store.open_session(name, f"owner-{name}")
    for n in range(batches):
        for name in names:
            store.write_batch(name, [AppendMessages(messages=[user(f"{name} {n}")]),
                                     RecordEvents(run_id="r", events=[{"type": "turn_start",
                                                                       "turn": n}])])
    store.close()


def test_eight_processes_writing_one_file_lose_and_mix_nothing(tmp_path: Path) -> None:
    """Sessions made at once get numbers of their own, and the keys each transaction gives
    never collide: every message and event is read back in its session, in order."""
    path = str(tmp_path / "s.db")
    SQLiteStore(path).close()
    run_in_processes(_write_sessions, [(path, n, 30) for n in range(8)], timeout=120)
    with SQLiteStore(path) as store:
        names = [f"p{w}-{k}" for w in range(8) for k in range(2)]
        for name in names:
            assert [m.content for m in store.load(name)] == [f"{name} {n}" for n in range(30)]
            assert [e["turn"] for e in store.events(name)] == list(range(30))
            assert store.message_count(name) == 30
        nums = [row[0] for row in store._db.execute("SELECT num FROM sessions")]
        assert sorted(nums) == list(range(1, 17))
