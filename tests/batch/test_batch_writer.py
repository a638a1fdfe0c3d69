"""The batch's JSONL writer: lines gathered on the event loop reach the writer thread in groups
(a thread woken per line cost about three context switches a task), in order, within
`FLUSH_SECONDS` of being written, and every one of them by `aclose()`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from loopwright.batch.results import JsonlWriter


def voluntary_switches(native_id: int) -> int:
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines()
                if line.startswith("voluntary_ctxt_switches"))


def ids(path: Path) -> list[int]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


async def test_lines_of_many_tasks_wake_the_writer_thread_a_few_times(tmp_path: Path) -> None:
    writer = JsonlWriter()
    results = await asyncio.to_thread(writer.open, tmp_path / "results.jsonl")
    thread = writer._thread.native_id
    assert thread is not None
    before = voluntary_switches(thread)
    for n in range(300):  # tasks that end a millisecond apart, the loop idle in between
        results.append({"id": n})
        await asyncio.sleep(0.001)
    woken = voluntary_switches(thread) - before
    await writer.aclose()
    # a hand-over every 0.2 s or 256 lines, a few switches each (a line each woke it: >= 300)
    assert woken <= 40
    assert ids(tmp_path / "results.jsonl") == list(range(300))


async def test_a_lone_line_is_written_without_more_lines_or_aclose(tmp_path: Path) -> None:
    writer = JsonlWriter(flush_seconds=0.01)
    results = await asyncio.to_thread(writer.open, tmp_path / "results.jsonl")
    results.append({"id": 1})
    deadline = time.monotonic() + 30
    while not (tmp_path / "results.jsonl").read_text():  # the timer hands it over
        assert time.monotonic() < deadline, "the line was never written"
        await asyncio.sleep(0.01)
    assert ids(tmp_path / "results.jsonl") == [1]
    await writer.aclose()


async def test_a_full_group_is_handed_over_before_the_timer(tmp_path: Path) -> None:
    writer = JsonlWriter(flush_seconds=3600, flush_lines=3)
    results = await asyncio.to_thread(writer.open, tmp_path / "results.jsonl")
    for n in range(4):
        results.append({"id": n})
    deadline = time.monotonic() + 30
    while len(ids(tmp_path / "results.jsonl")) < 3:
        assert time.monotonic() < deadline, "the full group was never written"
        await asyncio.sleep(0.01)
    await writer.aclose()  # the fourth, still gathered, is written now
    assert ids(tmp_path / "results.jsonl") == [0, 1, 2, 3]


async def test_lines_of_two_files_keep_their_order(tmp_path: Path) -> None:
    writer = JsonlWriter()
    trajectories = await asyncio.to_thread(writer.open, tmp_path / "trajectories.jsonl")
    results = await asyncio.to_thread(writer.open, tmp_path / "results.jsonl")
    for n in range(300):
        trajectories.append({"id": n})
        results.append({"id": n})
    await writer.aclose()
    assert ids(tmp_path / "trajectories.jsonl") == list(range(300))
    assert ids(tmp_path / "results.jsonl") == list(range(300))



async def test_a_failed_write_stops_the_batch_and_closes_every_file(tmp_path: Path) -> None:
    writer = JsonlWriter(flush_seconds=3600, flush_lines=1)  # each line handed over at once
    full = await asyncio.to_thread(writer.open, Path("/dev/full"))  # every write: ENOSPC
    results = await asyncio.to_thread(writer.open, tmp_path / "results.jsonl")
    deadline = time.monotonic() + 30
    with pytest.raises(OSError):  # a line after the failure is refused, not lost quietly
        while True:
            full.append({"id": 0})
            assert time.monotonic() < deadline, "the failed write was never reported"
            await asyncio.sleep(0.01)
    with pytest.raises(OSError):
        await writer.aclose()
    assert results._handle.closed
