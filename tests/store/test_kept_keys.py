"""`SQLiteStore.write_batch` keeps a session's keys from one batch to its next (a steady turn
reads them no more): a batch after another writer's rows, or after a batch that failed, still
writes every message once, in order, with no gap in the session's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.errors import SessionError
from loopwright.messages import Message, assistant, user
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.writes import AppendMessages, OpenSession, RecordEvents, ReleaseLease

FIELDS = {"parent_id": None, "title": "t", "model": "m", "cwd": "", "system_prompt": None}


def opened(store: SQLiteStore, *said: Message) -> None:
    store.write_batch("s", [OpenSession(owner="run-1", fields=FIELDS),
                            AppendMessages(messages=list(said))])


def contents(store: SQLiteStore) -> list[str]:
    return [m.content for m in store.load("s")]


def test_a_batch_after_another_connections_rows_goes_after_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as ours, SQLiteStore(path) as theirs:
        opened(ours, user("one"))
        theirs.append_many("s", [assistant("two")])  # a run that took the lease over
        ours.write_batch("s", [AppendMessages(messages=[user("three")])])
        ours.write_batch("s", [AppendMessages(messages=[assistant("four")])])
        assert contents(ours) == contents(theirs) == ["one", "two", "three", "four"]
        assert ours.message_count("s") == 4


def test_a_failed_batch_leaves_no_gap_in_the_keys(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        opened(store, user("one"))
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages + 1}")  # a disk that is full
        with pytest.raises(SessionError, match="full"):  # its message is keyed, then it fails
            store.write_batch("s", [AppendMessages(messages=[assistant("lost")]),
                                    RecordEvents(run_id="r", events=[{"big": "x" * 200_000}])])
        store._db.execute("PRAGMA max_page_count = 1073741823")
        store.write_batch("s", [AppendMessages(messages=[assistant("two")])])
        assert contents(store) == ["one", "two"]
        assert store.message_count("s") == 2


def test_a_compaction_between_batches_is_followed(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        opened(store, user("one"), assistant("two"))
        store.compact("s", [user("summary")])
        store.write_batch("s", [AppendMessages(messages=[assistant("three")])])
        assert contents(store) == ["summary", "three"]
        assert store.message_count("s") == 2


def test_a_session_given_back_and_written_elsewhere_is_read_afresh(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as ours, SQLiteStore(path) as theirs:
        opened(ours, user("one"))
        ours.write_batch("s", [ReleaseLease(owner="run-1")])
        theirs.write_batch("s", [OpenSession(owner="run-2", fields=FIELDS),
                                 AppendMessages(messages=[assistant("two")])])
        theirs.write_batch("s", [ReleaseLease(owner="run-2")])
        ours.write_batch("s", [OpenSession(owner="run-3", fields=FIELDS),
                               AppendMessages(messages=[user("three")])])
        assert contents(theirs) == ["one", "two", "three"]
        assert theirs.message_count("s") == 3


def test_a_full_disk_is_reported_as_full_not_as_a_failed_rollback(tmp_path: Path) -> None:
    """SQLite rolls a transaction back itself on a full disk; the ROLLBACK after it failed
    ("no transaction is active"), and that error was the one raised."""
    with SQLiteStore(tmp_path / "s.db") as store:
        opened(store, user("one"))
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(SessionError) as raised:
            store.append_many("s", [assistant("x" * 200_000)])
        assert "full" in str(raised.value)
        assert "rollback" not in str(raised.value)


def test_a_batch_written_again_that_fails_leaves_no_gap_either(tmp_path: Path) -> None:
    """A kept key taken by another writer, then the batch written again with fresh keys
    fails (a full disk): the keys that second attempt moved on were kept."""
    path = tmp_path / "s.db"
    with SQLiteStore(path) as ours, SQLiteStore(path) as theirs:
        opened(ours, user("one"))
        theirs.append_many("s", [assistant("two")])
        pages = ours._db.execute("PRAGMA page_count").fetchone()[0]
        ours._db.execute(f"PRAGMA max_page_count = {pages + 1}")
        with pytest.raises(SessionError, match="full"):
            ours.write_batch("s", [AppendMessages(messages=[user("lost")]),
                                   RecordEvents(run_id="r", events=[{"big": "x" * 200_000}])])
        ours._db.execute("PRAGMA max_page_count = 1073741823")
        ours.write_batch("s", [AppendMessages(messages=[user("three")])])
        assert contents(theirs) == ["one", "two", "three"]
        assert theirs.message_count("s") == 3
