"""Statuses that only matter when debugging ("text_tool_calls: read 1 tool call(s)…", on every
call of a small local model) are shown with --verbose only (a new user's walk-through, item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env

TEXT_CALL = ('<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n'
             "</tool_call>")


@pytest.mark.parametrize("verbose", [False, True])
def test_text_tool_calls_are_noted_only_with_verbose(tmp_path: Path, verbose: bool) -> None:
    (tmp_path / "notes.txt").write_text("the sky is green\n")
    # a server that runs open weights itself: its text calls are read (review.plan)
    with FakeModelServer([Reply(TEXT_CALL), Reply("Green.")], flavor="vllm") as server:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "What do my notes say?", "--model",
             "test-model", "--base-url", server.base_url, *(["--verbose"] if verbose else [])],
            cwd=tmp_path, env=cli_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Green."
    assert "read_file" in proc.stderr  # the call itself is always shown
    assert ("text_tool_calls: read 1 tool call(s)" in proc.stderr) is verbose, proc.stderr
