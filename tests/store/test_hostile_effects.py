"""An effect record read back on resume is checked before it is believed: its paths are read only
inside the workspace, never through a symlink, never from a device or a pipe, and a record of the
wrong shape (a damaged or foreign row) gives the "nobody knows" note — the resumed run neither
crashes, hangs nor reads outside the workspace, and what it tells the model is true."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from store_helpers import note_on_resume

from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.tools.effects import EFFECT_EVENT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files")

CUT = ToolCall(id="c1", name="write_file", arguments='{"path": "notes.txt", "content": "new"}')


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def crashed_session(db: Path, record: Any) -> None:
    """A session whose last call was cut off after recording `record` as its effect (the
    event row as a hostile or damaged database could hold it)."""
    with SQLiteStore(db) as store:
        store.create("s")
        store.append_many("s", [Message(role="user", content="Write the notes."),
                                Message(role="assistant", tool_calls=[CUT])])
        store.record_events("s", "r1", [{"type": EFFECT_EVENT, "id": "c1",
                                         "name": "write_file", **record}])


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


async def test_a_file_swapped_for_a_symlink_is_not_read_through_it(
        tmp_path: Path, work: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"new")  # what the call meant to write, so a read through it "took"
    (work / "notes.txt").symlink_to(outside)
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": str(work / "notes.txt"), "before": sha(b"old"), "after": sha(b"new")}]})
    note = await note_on_resume(tmp_path, work, "s")
    assert "It took effect" not in note and "changed since" in note


async def test_a_directory_swapped_for_a_symlink_is_not_read_through_it(
        tmp_path: Path, work: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "notes.txt").write_bytes(b"new")
    (work / "sub").symlink_to(outside)
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": str(work / "sub" / "notes.txt"), "before": None, "after": sha(b"new")}]})
    note = await note_on_resume(tmp_path, work, "s")
    assert "It took effect" not in note and "changed since" in note


async def test_a_path_outside_the_workspace_is_not_read(tmp_path: Path, work: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_bytes(b"new")
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": str(outside), "before": None, "after": sha(b"new")}]})
    assert await note_on_resume(tmp_path, work, "s") == INTERRUPTED_RESULT  # unknown, not "took"


async def test_a_relative_path_is_not_read_against_the_process_directory(
        tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_bytes(b"new")
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": "notes.txt", "before": None, "after": sha(b"new")}]})
    assert await note_on_resume(tmp_path, work, "s") == INTERRUPTED_RESULT


async def test_a_device_or_a_pipe_at_the_path_is_not_read(tmp_path: Path, work: Path) -> None:
    os.mkfifo(work / "pipe")  # opening it for reading would wait for a writer for ever
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": str(work / "pipe"), "before": None, "after": sha(b"new")},
        {"path": "/dev/zero", "before": None, "after": sha(b"new")}]})
    note = await note_on_resume(tmp_path, work, "s")
    assert "It took effect" not in note and "It did not take effect" not in note


async def test_an_unreadable_file_gives_a_note_not_a_crash(tmp_path: Path, work: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    target = work / "notes.txt"
    target.write_bytes(b"new")
    target.chmod(0)
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": str(target), "before": sha(b"old"), "after": sha(b"new")}]})
    try:
        note = await note_on_resume(tmp_path, work, "s")
    finally:
        target.chmod(0o600)
    assert note == INTERRUPTED_RESULT


def one_file(**entry: Any) -> Any:
    return lambda work: {"files": [{key: value.replace("WORK", str(work))
                                     if isinstance(value, str) else value
                                     for key, value in entry.items()}]}


# each: the workspace → the recorded effect
DAMAGED: dict[str, Any] = {
    "files is a string": lambda work: {"files": "notes.txt"},
    "files is an object": lambda work: {"files": {"path": str(work / "notes.txt")}},
    "an entry is a string": lambda work: {"files": [str(work / "notes.txt")]},
    "an entry is null": lambda work: {"files": [None]},
    "path is a number": one_file(path=7, before=None, after=None),
    "path is null": one_file(path=None),
    "path is empty": one_file(path=""),
    "digests of the wrong type": one_file(path="WORK/notes.txt", before=5, after=["x"]),
    "path with a NUL": one_file(path="WORK/notes.txt\x00/etc/passwd", before=None,
                                after=None),
    "path too long": one_file(path="WORK/" + "x" * 70_000, before=None, after=None),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
async def test_an_effect_record_of_the_wrong_shape_gives_the_unknown_note(
        tmp_path: Path, work: Path, damage: str) -> None:
    (work / "notes.txt").write_bytes(b"old")
    crashed_session(tmp_path / "s.db", DAMAGED[damage](work))
    note = await note_on_resume(tmp_path, work, "s")
    assert note == INTERRUPTED_RESULT
    assert len(note) < 2_000  # a huge recorded path is not echoed whole


async def test_a_large_file_is_checked_without_reading_it_whole(
        tmp_path: Path, work: Path) -> None:
    """Where the rule must still fire: a file the call wrote, found as written."""
    data = b"x" * (8 << 20)
    (work / "big.bin").write_bytes(data)
    crashed_session(tmp_path / "s.db", {"files": [
        {"path": str(work / "big.bin"), "before": None, "after": sha(data)}]})
    note = await note_on_resume(tmp_path, work, "s")
    assert "It took effect" in note and "big.bin" in note
