"""`loopwright sessions` on a session whose messages and title hold what a terminal obeys (C1
controls such as U+009B, a CSI to a terminal that reads C1; ESC sequences) or what no encoding
writes (a lone surrogate, which a provider may send): JSON output is the same JSON with those
escaped, text output is inert, and nothing is lost or crashes. Through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.messages import ToolCall, assistant, tool_result, user
from loopwright.store.sqlite import SQLiteStore
from shared_helpers import cli_env

TITLE = "title \x9b2J esc \x1b]0;owned\x07"
CALL = ToolCall(id="c1", name="peek\x1b[2J", arguments='{"a":"\ud800 \x9b2J"}')
MESSAGES = [user("hostile \x9b2J"),
            assistant("lone \ud800 csi \x9b2J esc \x1b[31m red", tool_calls=[CALL]),
            tool_result(CALL, "out \x9b2J \ud800")]
RAW = [b"\x1b", "\x9b".encode(), b"\x07"]  # what must not reach a terminal as it is


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A data directory holding one such session ("s1"), and the CLI's environment for it."""
    data = tmp_path / "data"
    data.mkdir()
    with SQLiteStore(data / "sessions.db") as store:
        store.create("s1", model="m", cwd=str(tmp_path), title=TITLE)
        store.append_many("s1", MESSAGES)
    return tmp_path, cli_env(tmp_path / "home", LOOPWRIGHT_DATA_DIR=str(data))


def _sessions(hostile: tuple[Path, dict[str, str]], *args: str) -> bytes:
    cwd, env = hostile
    proc = subprocess.run([sys.executable, "-m", "loopwright", "sessions", *args], cwd=cwd,
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not any(raw in proc.stderr for raw in RAW)
    return proc.stdout


def test_list_json_escapes_c1_and_esc_and_keeps_the_title(
        hostile: tuple[Path, dict[str, str]]) -> None:
    out = _sessions(hostile, "list", "--json")
    assert not any(raw in out for raw in RAW)  # the U+009B was written raw
    (row,) = map(json.loads, out.splitlines())
    assert row["title"] == TITLE


def test_export_to_stdout_is_the_exact_history_with_nothing_raw(
        hostile: tuple[Path, dict[str, str]]) -> None:
    out = _sessions(hostile, "export", "s1")
    assert not any(raw in out for raw in RAW)  # the U+009B was written raw
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[1]["content"] == "lone \ud800 csi \x9b2J esc \x1b[31m red"  # was "lone ?"
    assert rows[1]["tool_calls"][0]["arguments"] == '{"a":"\ud800 \x9b2J"}'
    assert rows[2]["content"] == "out \x9b2J \ud800"


def test_export_to_a_file_writes_the_exact_history(
        hostile: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _sessions(hostile, "export", "s1", "-o", str(tmp_path / "out.jsonl"))  # was a crash
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["content"] for row in rows] == [m.content for m in MESSAGES]


@pytest.mark.parametrize("args", [["list"], ["show", "s1", "--events", "--full"],
                                  ["search", "hostile"]])
def test_text_output_is_inert(hostile: tuple[Path, dict[str, str]], args: list[str]) -> None:
    out = _sessions(hostile, *args)
    assert not any(raw in out for raw in RAW)
    assert b"\\x9b2J" in out  # shown as an escape, not dropped


def test_plain_text_is_shown_and_written_as_it_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    text = "plain — é ✓ 😀"
    with SQLiteStore(data / "sessions.db") as store:
        store.create("s1", model="m", cwd=str(tmp_path), title=text)
        store.append_many("s1", [user(text)])
    env = cli_env(tmp_path / "home", LOOPWRIGHT_DATA_DIR=str(data))
    out = _sessions((tmp_path, env), "list", "--json")
    assert text.encode() in out  # UTF-8 as it is, not escaped
    assert json.loads(out)["title"] == text
    exported = _sessions((tmp_path, env), "export", "s1")
    assert json.dumps(text, ensure_ascii=False).encode() in exported


def test_rm_names_a_hostile_session_id_inertly(tmp_path: Path) -> None:
    """`sessions rm` printed the id it deleted as it is: an id another program wrote into the
    database reached the terminal raw."""
    data = tmp_path / "data"
    data.mkdir()
    hostile_id = "s\x1b]0;owned\x07\x9b2J"
    with SQLiteStore(data / "sessions.db") as store:
        store.create(hostile_id, model="m", cwd=str(tmp_path), title="t")
    _sessions((tmp_path, cli_env(tmp_path / "home", LOOPWRIGHT_DATA_DIR=str(data))),
              "rm", "--yes", hostile_id)
    with SQLiteStore(data / "sessions.db") as store:
        assert store.get(hostile_id) is None
