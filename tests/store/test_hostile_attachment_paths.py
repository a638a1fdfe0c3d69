"""A stored attachment whose path no file can have (a NUL byte; a lone surrogate, which no file
name decodes to), or a regular file that refuses to be read (/proc/self/mem), is an attachment
gone, like any other file that cannot be read: a resumed run goes on with the note, `run
--resume` and `sessions show` say so, and none of them raises. Both stores (each keeps the row's
JSON as text, where a NUL and a surrogate are escapes)."""

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

# what the row's path is, in the user's folder or (absolute) as it is; why it is gone
HOSTILE_PATHS = {"a NUL byte": ("chart\x00.png", "not a file name"),
                 "a lone surrogate": ("chart\ud800.png", "not a file name"),
                 "a file that refuses reads": ("/proc/self/mem", "Input/output error")}


async def session_pointed_at(tmp_path: Path, store_spec: str, name: str) -> str:
    """Session s1 whose one attachment's row names `name` in the user's folder."""
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart, store_spec)
    path = str(chart.parent / name)  # an absolute `name` as it is

    def pointed(attachment: dict[str, Any]) -> None:
        attachment["path"] = path
    rewrite_attachments(tmp_path, store_spec, pointed)
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("hostile", list(HOSTILE_PATHS))
async def test_a_resumed_run_goes_on_without_it(tmp_path: Path, store_spec: str,
                                                hostile: str) -> None:
    name, why = HOSTILE_PATHS[hostile]
    await session_pointed_at(tmp_path, store_spec, name)
    server, warned = await resume(tmp_path, store_spec)
    assert GONE in sent(server) and "image_url" not in sent(server)
    assert len(warned) == 1 and why in warned[0], warned


def loopwright(tmp_path: Path, store_spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", *args], cwd=tmp_path, capture_output=True,
        text=True, errors="backslashreplace", timeout=60,
        env=cli_env(tmp_path, LOOPWRIGHT_DATA_DIR=str(tmp_path / "data"),
                    LOOPWRIGHT_STORE=store_spec))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hostile", list(HOSTILE_PATHS))
async def test_the_cli_shows_and_resumes_it_as_gone(tmp_path: Path, store_spec: str,
                                                    hostile: str) -> None:
    name, why = HOSTILE_PATHS[hostile]
    await session_pointed_at(tmp_path, store_spec, name)
    shown = loopwright(tmp_path, store_spec, "sessions", "show", "s1")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if "  attachment " in line]
    assert f"image/png  gone: cannot read it: {why}" in line
    with FakeModelServer([Reply("still a square")]) as server:
        resumed = loopwright(tmp_path, store_spec, "run", "and now?", "--resume", "s1",
                             "--model", "fake-model", "--base-url", server.base_url)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "still a square" in resumed.stdout
    assert "is no longer available" in resumed.stderr and why in resumed.stderr
    assert GONE in sent(server)
