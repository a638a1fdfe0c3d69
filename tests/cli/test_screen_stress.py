"""The terminal under stress (tmux): long replies, hostile text and output, many tool calls, odd
terminals. What must hold: every line of the answer shows once, the CLI's work grows no faster
than the answer, and nothing a model or a tool sends drives the terminal.

How long a run takes is not asserted (a shared machine stretches it at will): a long reply runs
beside the same reply at an eighth of its size, and the CLI's CPU time may grow at most as the
reply does. Drawing a growing block or the running lines again at every delta grew with the
square of the reply (64 times the CPU for 8 times the reply)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path

from tmux_pane import Pane, open_pane

from loopwright.testing import FakeModelServer, Reply, call


def _start(pane: Pane, server: FakeModelServer, workdir: Path) -> None:
    pane.start(["run", "Go", "--model", "fake-model", "--base-url", server.base_url, "--yes"],
               cwd=workdir)


def _cli_cpu(pane: Pane) -> float:
    """CPU seconds the CLI of a pane's finished run took: its shell waited for it, so the kernel
    counts them among the shell's children's (the pane's own process, /proc's cutime and
    cstime, in clock ticks)."""
    shell = pane.tmux("list-panes", "-t", "t", "-F", "#{pane_pid}").strip()
    fields = Path(f"/proc/{shell}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / 100


def _run_beside_an_eighth(pane: Pane, tmp_path: Path,
                          script: Callable[[int, Path], list[Reply]], size: int
                          ) -> tuple[str, float]:
    """`run` of `script(size, workdir)` in `pane` until it exits, and of `script(size // 8, …)`
    in a second pane and a folder of its own at the same time (the pair takes about as long as
    the larger): the first's whole screen, history included, and how many times the CPU of the
    smaller the larger took."""
    (tmp_path / "small").mkdir()
    with contextlib.ExitStack() as stack:
        small = stack.enter_context(open_pane(tmp_path / "small"))
        panes = {size: pane, size // 8: small}
        for count, shown in panes.items():
            workdir = tmp_path / "small" if shown is small else tmp_path
            server = stack.enter_context(FakeModelServer(script(count, workdir)))
            _start(shown, server, workdir)
        for shown in panes.values():
            shown.wait_text("[exit 0]")
        growth = _cli_cpu(pane) / max(_cli_cpu(small), 0.01)
        return pane.screen(history=True), growth


def _code_reply(lines: int, workdir: Path) -> list[Reply]:
    code = "".join(f"value_{n} = compute({n}, 'text')  # note\n" for n in range(lines))
    return [Reply(f"Here:\n\n```python\n{code}```\n\nDone.")]


def test_a_300_line_code_block_shows_each_line_once_in_linear_time(
        pane: Pane, tmp_path: Path) -> None:
    shown, growth = _run_beside_an_eighth(pane, tmp_path, _code_reply, 300)
    for n in (0, 150, 299):
        assert shown.count(f"value_{n} = compute({n}, 'text')") == 1
    assert "completed · 1 turn" in shown, shown[-2000:]
    assert growth < 8, growth  # was 160 s: the block re-highlighted at every delta


def _calls_reply(calls: int, workdir: Path) -> list[Reply]:
    for n in range(calls):
        (workdir / f"f{n}.txt").write_text(f"file {n}\n")
    return [Reply("Reading.", tool_calls=[call("read_file", {"path": f"f{n}.txt"})
                                          for n in range(calls)]), Reply("Read.")]


def test_200_calls_in_one_reply_show_each_outcome_once_and_a_repeated_error_once(
        pane: Pane, tmp_path: Path) -> None:
    shown, growth = _run_beside_an_eighth(pane, tmp_path, _calls_reply, 200)
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
    assert "completed · 2 turns" in shown, shown[-2000:]
    assert growth < 8, growth  # was 25 s and more: every change drew all 200 running lines


def _list_reply(items: int, workdir: Path) -> list[Reply]:
    listed = "\n".join(f"- item number {n}" for n in range(items))
    return [Reply(f"Items:\n\n{listed}\n\nDone.", chunk_size=4)]


def test_a_list_of_4000_lines_shows_each_line_once_in_linear_time(
        pane: Pane, tmp_path: Path) -> None:
    shown, growth = _run_beside_an_eighth(pane, tmp_path, _list_reply, 4000)
    numbers = [int(n) for n in re.findall(r"item number (\d+)", shown)]
    assert numbers == list(range(4000 - len(numbers), 4000))  # (what tmux's history keeps)
    assert "completed · 1 turn" in shown, shown[-2000:]
    assert growth < 8, growth  # was 30 s and more: the whole block was scanned for its end at
    # every delta


def test_long_hidden_reasoning_is_not_drawn_at_every_delta(pane: Pane, tmp_path: Path) -> None:
    # was 17 s: the spinner's count was drawn at every delta, a line for each of 25,875. It is
    # drawn at the live region's refreshes instead, a few a second: what reaches the terminal
    # is fewer bytes than the deltas, however long the run takes
    reasoning = "thinking hard about it " * 9000
    deltas = -(-len(reasoning) // 8)
    written = tmp_path / "written.bin"
    with FakeModelServer([Reply("Answer.", reasoning=reasoning, chunk_size=8)]) as server:
        _start(pane, server, tmp_path)
        # (attached before the CLI has started, let alone been sent its first reasoning)
        pane.tmux("pipe-pane", "-o", "-t", "t", f"cat > '{written}'")
        pane.wait_text("[exit 0]")
    shown = " ".join(pane.screen(history=True).split())
    assert f"thought for {len(reasoning):,} chars of reasoning" in shown
    assert "completed · 1 turn" in shown, shown[-2000:]
    assert written.stat().st_size < deltas, (written.stat().st_size, deltas)
