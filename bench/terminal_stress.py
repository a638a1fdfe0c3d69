"""The terminal under stress: wall and CPU time of `loopwright run` rendering long replies on a
terminal (a pseudo-terminal of 80x30 whose output is read and dropped), each at an eighth of
its size and at the size tests/cli/test_screen_stress.py streams: a code block of 300 lines, 200
tool calls in one reply, a list of 4,000 lines sent 4 characters a delta, 207,000 characters of
hidden reasoning. The tests check only that the CPU grows no faster than the reply (and that
reasoning is not drawn at every delta); this prints the figures.

    python bench/terminal_stress.py
"""

from __future__ import annotations

import fcntl
import os
import pty
import resource
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

from loopwright.testing import FakeModelServer, Reply, call


def code_block(lines: int, _: Path) -> list[Reply]:
    code = "".join(f"value_{n} = compute({n}, 'text')  # note\n" for n in range(lines))
    return [Reply(f"Here:\n\n```python\n{code}```\n\nDone.")]


def tool_calls(calls: int, workdir: Path) -> list[Reply]:
    for n in range(calls):
        (workdir / f"f{n}.txt").write_text(f"file {n}\n")
    return [Reply("Reading.", tool_calls=[call("read_file", {"path": f"f{n}.txt"})
                                          for n in range(calls)]), Reply("Read.")]


def long_list(items: int, _: Path) -> list[Reply]:
    listed = "\n".join(f"- item number {n}" for n in range(items))
    return [Reply(f"Items:\n\n{listed}\n\nDone.", chunk_size=4)]


def reasoning(repeats: int, _: Path) -> list[Reply]:
    return [Reply("Answer.", reasoning="thinking hard about it " * repeats, chunk_size=8)]


REPLIES: dict[str, tuple[Callable[[int, Path], list[Reply]], int]] = {
    "code block (lines)": (code_block, 300),
    "tool calls": (tool_calls, 200),
    "list (lines)": (long_list, 4000),
    "hidden reasoning (x23 chars)": (reasoning, 9000),
}


def run_on_a_terminal(script: list[Reply], workdir: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and bytes written of one `loopwright run`."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 80, 0, 0))
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LOOPWRIGHT_", "XDG_")) and not key.endswith("_API_KEY")}
    env.update(HOME=str(workdir / "home"), TERM="xterm-256color", COLUMNS="80", LINES="30")
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    written = 0
    with FakeModelServer(script) as server:
        started = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-m", "loopwright", "run", "Go", "--model", "fake-model",
             "--base-url", server.base_url, "--yes"],
            cwd=workdir, env=env, stdin=follower, stdout=follower, stderr=follower)
        os.close(follower)
        while True:  # drain the terminal until the child has closed its side
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            written += len(chunk)
        child.wait()
        wall = time.monotonic() - started
    os.close(leader)
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return wall, cpu, written


def main() -> None:
    print("| reply | size | wall | CPU | bytes written |")
    print("|---|---:|---:|---:|---:|")
    for name, (script, size) in REPLIES.items():
        for count in (size // 8, size):
            with tempfile.TemporaryDirectory() as folder:
                workdir = Path(folder)
                (workdir / "home").mkdir()
                wall, cpu, written = run_on_a_terminal(script(count, workdir), workdir)
            print(f"| {name} | {count:,} | {wall:.1f} s | {cpu:.2f} s | {written:,} |")


if __name__ == "__main__":
    main()
