"""The terminal under stress (tmux): long replies, hostile text and output, many tool calls, odd
terminals. What must hold: every line of the answer shows once, in time, and nothing a model or
a tool sends drives the terminal."""

from __future__ import annotations

import re
from pathlib import Path

from tmux_pane import Pane

from loopwright.testing import FakeModelServer, Reply, call


def _run(pane: Pane, script: list[Reply], tmp_path: Path, *, width: int = 80,
         height: int = 30, **env: str) -> str:
    """`run` in the pane until it exits; the whole screen, history included."""
    with FakeModelServer(script) as server:
        pane.start(["run", "Go", "--model", "fake-model", "--base-url", server.base_url,
                    "--yes"], cwd=tmp_path, width=width, height=height, **env)
        pane.wait_text("[exit 0]")
    return pane.screen(history=True)


def test_a_300_line_code_block_streams_in_seconds_and_shows_each_line_once(
        pane: Pane, tmp_path: Path) -> None:
    code = "".join(f"value_{n} = compute({n}, 'text')  # note\n" for n in range(300))
    shown = _run(pane, [Reply(f"Here:\n\n```python\n{code}```\n\nDone.")], tmp_path)
    for n in (0, 150, 299):
        assert shown.count(f"value_{n} = compute({n}, 'text')") == 1
    elapsed = re.search(r"completed · 1 turn · ([\d.]+)s", shown)
    assert elapsed is not None, shown[-2000:]
    assert float(elapsed.group(1)) < 30  # was 160 s: the block re-highlighted at every delta


def test_200_calls_in_one_reply_show_each_outcome_once_and_a_repeated_error_once(
        pane: Pane, tmp_path: Path) -> None:
    for n in range(200):
        (tmp_path / f"f{n}.txt").write_text(f"file {n}\n")
    calls = [call("read_file", {"path": f"f{n}.txt"}) for n in range(200)]
    shown = _run(pane, [Reply("Reading.", tool_calls=calls), Reply("Read.")], tmp_path)
    lines = shown.splitlines()
    ran = [line for line in lines if line.startswith("✓ read_file ")]
    assert sorted(ran) == sorted(set(ran))
    # every call that ran has its line: one was now and then erased by the live region
    assert {re.search(r"f(\d+)\.txt", line).group(1) for line in ran} == {  # type: ignore[union-attr]
        str(n) for n in range(64)}
    refused = [line for line in lines if line.startswith("✗ read_file ")]
    assert len(refused) == 136  # over the per-reply limit: not run
    assert sum("the same error" in line for line in refused) == 135
    flat = " ".join(shown.split())
    assert flat.count("at most 64 calls run per reply") == 1  # was 136 times, 4 lines each
    elapsed = re.search(r"completed · 2 turns · ([\d.]+)s", shown)
    assert elapsed is not None and float(elapsed.group(1)) < 30  # was 25 s and more: every
    # change drew all 200 running lines again


def test_a_list_of_4000_lines_streams_in_seconds_and_shows_each_line_once(
        pane: Pane, tmp_path: Path) -> None:
    items = "\n".join(f"- item number {n}" for n in range(4000))
    shown = _run(pane, [Reply(f"Items:\n\n{items}\n\nDone.", chunk_size=4)], tmp_path)
    numbers = [int(n) for n in re.findall(r"item number (\d+)", shown)]
    assert numbers == list(range(4000 - len(numbers), 4000))  # (what tmux's history keeps)
    elapsed = re.search(r"completed · 1 turn · ([\d.]+)s", shown)
    assert elapsed is not None and float(elapsed.group(1)) < 15  # was 30 s and more: the whole
    # block was scanned for its end at every delta


def test_long_hidden_reasoning_streams_in_seconds(pane: Pane, tmp_path: Path) -> None:
    reasoning = "thinking hard about it " * 9000
    shown = _run(pane, [Reply("Answer.", reasoning=reasoning, chunk_size=8)], tmp_path)
    assert f"thought for {len(reasoning):,} chars of reasoning" in " ".join(shown.split())
    elapsed = re.search(r"completed · 1 turn · ([\d.]+)s", shown)
    assert elapsed is not None and float(elapsed.group(1)) < 8  # was 17 s: the spinner's
    # count was drawn at every delta
