"""A stored attachment whose path no file can have (a NUL byte; a lone surrogate, which no file
name decodes to) is an attachment gone, like any other file that cannot be read: a resumed run
goes on with the note, `run --resume` and `sessions show` say so, and none of them raises. Both
stores (each keeps the row's JSON as text, where both are escapes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.store.test_resumed_attachments import (
    GONE,
    first_run,
    resume,
    rewrite_attachments,
    sent,
    users_chart,
)

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env

NOT_FILE_NAMES = {"a NUL byte": "chart\x00.png", "a lone surrogate": "chart\ud800.png"}


async def session_pointed_at(tmp_path: Path, store_spec: str, name: str) -> str:
    """Session s1 whose one attachment's row names `name` in the user's folder."""
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart, store_spec)
    path = str(chart.parent / name)

    def pointed(attachment: dict[str, Any]) -> None:
        attachment["path"] = path
    rewrite_attachments(tmp_path, store_spec, pointed)
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(NOT_FILE_NAMES))
async def test_a_resumed_run_goes_on_without_it(tmp_path: Path, store_spec: str,
                                                name: str) -> None:
    await session_pointed_at(tmp_path, store_spec, NOT_FILE_NAMES[name])
    server, warned = await resume(tmp_path, store_spec)
    assert GONE in sent(server) and "image_url" not in sent(server)
    assert len(warned) == 1 and "not a file name" in warned[0], warned


def loopwright(tmp_path: Path, store_spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", *args], cwd=tmp_path, capture_output=True,
        text=True, errors="backslashreplace", timeout=60,
        env=cli_env(tmp_path, LOOPWRIGHT_DATA_DIR=str(tmp_path / "data"),
                    LOOPWRIGHT_STORE=store_spec))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(NOT_FILE_NAMES))
async def test_the_cli_shows_and_resumes_it_as_gone(tmp_path: Path, store_spec: str,
                                                    name: str) -> None:
    await session_pointed_at(tmp_path, store_spec, NOT_FILE_NAMES[name])
    shown = loopwright(tmp_path, store_spec, "sessions", "show", "s1")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if "attachment chart" in line]
    assert "image/png  gone: cannot read it: not a file name" in line
    with FakeModelServer([Reply("still a square")]) as server:
        resumed = loopwright(tmp_path, store_spec, "run", "and now?", "--resume", "s1",
                             "--model", "fake-model", "--base-url", server.base_url)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "still a square" in resumed.stdout
    assert "is no longer available" in resumed.stderr and "not a file name" in resumed.stderr
    assert GONE in sent(server)
