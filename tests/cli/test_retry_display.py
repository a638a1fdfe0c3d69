"""A reply that breaks off mid-stream and is tried again — without streaming, or on a fallback
model — as the person sees it: the retried reply starts on lines of its own, below one short
line saying a retry happened, never glued to what the broken attempt had shown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tmux_pane import Pane

from loopwright.testing import FakeModelServer, Fault, Reply, call
from shared_helpers import cli_env

PARTIAL = Reply("Let me look at the notes first, then I will tell you.",
                tool_calls=[call("read_file", {"path": "notes.txt"})], chunk_size=6)
CUT = Fault.cut_stream(PARTIAL, after_chunks=4)  # the stream dies inside the first sentence
BACKUP = [Reply("Backup reading.", tool_calls=[call("read_file", {"path": "notes.txt"})]),
          Reply("The notes say hello.")]


def _settings(backup: FakeModelServer) -> dict[str, str]:
    return {"LOOPWRIGHT_FALLBACKS": json.dumps([{"model": "b", "base_url": backup.base_url}]),
            "LOOPWRIGHT_RETRY_ATTEMPTS": "2", "LOOPWRIGHT_RETRY_BASE_DELAY": "0.01"}


def _run(primary: FakeModelServer, backup: FakeModelServer, cwd: Path,
         *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "run", "Read the notes", "--model", "fake-model",
         "--base-url", primary.base_url, *flags],
        cwd=cwd, env=cli_env(cwd, **_settings(backup)), capture_output=True, text=True,
        timeout=60)


def test_a_fallback_after_a_cut_stream_drops_the_partial_reply_from_the_screen(
        pane: Pane, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    with FakeModelServer([CUT, Fault.disconnect()]) as primary, \
            FakeModelServer(BACKUP) as backup:
        pane.start(["run", "Read the notes", "--model", "fake-model", "--base-url",
                    primary.base_url], cwd=tmp_path, **_settings(backup))
        shown = pane.wait_text("[exit 0]")
    lines = shown.splitlines()
    assert "Let me" not in shown  # was left on the screen, the backup's reply glued below it
    retries = [line for line in lines if line.startswith("↻ ")]
    assert retries[0] == "↻ the stream broke off; retrying without streaming"
    assert retries[1].startswith("↻ continuing on custom b")
    assert all(len(line) <= 80 for line in retries)  # one line each, however long the cause
    assert lines.index(retries[1]) + 1 == lines.index("Backup reading.")  # a line of its own
    assert "The notes say hello." in lines


def test_a_retry_that_gives_the_same_reply_shows_it_once_and_whole(pane: Pane,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    with FakeModelServer([CUT, PARTIAL, Reply("Done.")]) as primary, \
            FakeModelServer([]) as backup:
        pane.start(["run", "Read the notes", "--model", "fake-model", "--base-url",
                    primary.base_url], cwd=tmp_path, **_settings(backup))
        shown = pane.wait_text("[exit 0]")
    lines = shown.splitlines()
    whole = "Let me look at the notes first, then I will tell you."
    assert lines.count(whole) == 1  # was its first words, the note, then the rest
    assert lines[lines.index(whole) - 1] == "↻ the stream broke off; retrying without streaming"
    assert shown.count("Let me") == 1


def test_a_pipe_gets_the_answer_alone_and_no_note_glues_two_attempts(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    with FakeModelServer([CUT, Fault.disconnect()]) as primary, \
            FakeModelServer(BACKUP) as backup:
        proc = _run(primary, backup, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The notes say hello.\n"
    assert "Let me" not in proc.stderr  # was "Let me look at tBackup reading." as one note
    lines = proc.stderr.splitlines()
    fallback = next(n for n, line in enumerate(lines) if line.startswith("fallback: "))
    assert lines[fallback] == ("fallback: custom fake-model (chat_completions) failed; "
                               "continuing on custom b (chat_completions)")  # whole, on a pipe
    assert lines[fallback + 1] == "Backup reading."


def test_json_lines_carry_both_attempts_and_the_statuses_between_them(tmp_path: Path) -> None:
    with FakeModelServer([CUT, Fault.disconnect()]) as primary, \
            FakeModelServer(BACKUP) as backup:
        (tmp_path / "notes.txt").write_text("hello\n")
        proc = _run(primary, backup, tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e.get("kind") or e["type"] for e in events
             if e["type"] in ("text_delta", "status", "tool_call")]
    first_call = kinds.index("tool_call")
    assert kinds[:first_call].count("fallback") == 1
    fallback = kinds.index("fallback")
    assert "text_delta" in kinds[:fallback] and "text_delta" in kinds[fallback:first_call]
    assert "".join(e["text"] for e in events[[e.get("kind") for e in events].index("fallback"):]
                   if e["type"] == "text_delta").startswith("Backup reading.")
