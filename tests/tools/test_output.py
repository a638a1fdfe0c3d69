"""Output bounding (DESIGN §5, §7.1): long results are spilled to a file and previewed."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.output import SPILL_MARKER, clean_spill_directory

FAST = RetryPolicy(base_delay=0.01, jitter=0)
BIG = "".join(f"line {n:05d} of the long output\n" for n in range(3_000))  # ~90 KB


@tool(read_only=True)
def dump(size: int) -> str:
    """Return `size` characters of output."""
    return BIG[:size]


def tool_contents(server: FakeModelServer, n: int) -> list[str]:
    body: dict[str, Any] = server.model_requests[n].body
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def run_dump(tmp_path: Path, size: int, **options: Any) -> tuple[FakeModelServer, Any]:
    script = [Reply(tool_calls=[call("dump", {"size": size})]), Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[dump], retry=FAST,
                      cache_dir=str(tmp_path), **options)
        result = await agent.run("dump it")
    return server, result


async def test_a_long_result_is_spilled_whole_and_the_model_sees_head_tail_and_path(
        tmp_path: Path) -> None:
    server, result = await run_dump(tmp_path, len(BIG), context_window=8_192)
    assert result.stop_reason == "completed"
    [seen] = tool_contents(server, 1)
    assert len(seen) < 8_192  # the cap: a quarter of the window, in characters
    assert "line 00000" in seen and "line 02999" in seen and "line 01500" not in seen
    match = re.search(re.escape(SPILL_MARKER) + r"(\S+)", seen)
    assert match is not None
    spilled = Path(match.group(1))
    assert spilled.parent.parent == tmp_path / "spill"  # in the session's own directory
    assert spilled.parent.stat().st_mode & 0o777 == 0o700
    assert spilled.read_text(encoding="utf-8") == BIG


def spill_folder(server: FakeModelServer) -> Path:
    match = re.search(re.escape(SPILL_MARKER) + r"(\S+)", tool_contents(server, 1)[0])
    assert match is not None
    return Path(match.group(1)).parent


async def test_each_session_spills_into_a_directory_of_its_own(tmp_path: Path) -> None:
    folders = []
    for session in ("session-a", "session-b", "session-a"):  # a fresh Agent each time
        server, _ = await run_dump(tmp_path, len(BIG), context_window=8_192, session_id=session)
        folders.append(spill_folder(server))
    assert folders[0] == folders[2] != folders[1]
    # the name is no function of the session id alone: another cache's key gives another
    server, _ = await run_dump(tmp_path / "other", len(BIG), context_window=8_192,
                               session_id="session-a")
    assert spill_folder(server).name != folders[0].name
    assert "session-a" not in folders[0].name


async def test_without_a_cache_dir_each_run_spills_where_the_environment_says_then(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spilled = []
    for name in ("first", "second"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / name))
        script = [Reply(tool_calls=[call("dump", {"size": len(BIG)})]), Reply(text="ok")]
        with FakeModelServer(replies=script) as server:
            agent = Agent("m", base_url=server.base_url, api_key="k", tools=[dump], retry=FAST,
                          context_window=8_192)
            await agent.run("dump it")
        spilled.append(spill_folder(server).parent)
    assert spilled == [tmp_path / "first" / "loopwright" / "spill",
                       tmp_path / "second" / "loopwright" / "spill"]


async def test_a_result_under_the_cap_is_untouched(tmp_path: Path) -> None:
    server, _ = await run_dump(tmp_path, 1_000, context_window=8_192)
    assert tool_contents(server, 1) == [BIG[:1_000]]
    assert not (tmp_path / "spill").exists() or not any((tmp_path / "spill").iterdir())


async def test_the_cap_grows_with_the_window(tmp_path: Path) -> None:
    server, _ = await run_dump(tmp_path, 20_000, context_window=200_000)
    assert tool_contents(server, 1) == [BIG[:20_000]]


async def test_spill_files_older_than_seven_days_are_removed_at_start(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    old, fresh = spill / "old.txt", spill / "fresh.txt"
    old.write_text("old")
    fresh.write_text("fresh")
    eight_days_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (eight_days_ago, eight_days_ago))
    await run_dump(tmp_path, 10, context_window=8_192)
    assert not old.exists()
    assert fresh.exists()


async def test_old_spills_in_session_directories_go_and_so_do_the_emptied_directories(
        tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    stale, mixed = spill / "s-stale", spill / "s-mixed"
    stale.mkdir(parents=True)
    mixed.mkdir()
    eight_days_ago = time.time() - 8 * 24 * 3600
    for path in (stale / "a.txt", mixed / "b.txt", mixed / "fresh.txt"):
        path.write_text("x")
        if path.name != "fresh.txt":
            os.utime(path, (eight_days_ago, eight_days_ago))
    await run_dump(tmp_path, 10, context_window=8_192)
    assert not stale.exists()
    assert [p.name for p in mixed.iterdir()] == ["fresh.txt"]


def test_cleaning_keeps_the_key_however_old(tmp_path: Path) -> None:
    key = tmp_path / ".key"
    key.write_bytes(b"k" * 32)
    os.utime(key, (0, 0))
    assert clean_spill_directory(tmp_path) == 0 and key.exists()


def test_cleaning_counts_what_it_removed(tmp_path: Path) -> None:
    for n in range(3):
        path = tmp_path / f"f{n}.txt"
        path.write_text("x")
        os.utime(path, (0, 0))
    (tmp_path / "new.txt").write_text("y")
    assert clean_spill_directory(tmp_path) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["new.txt"]
