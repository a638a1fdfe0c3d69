"""The cost of the check for what a sandboxed command plants below the top (`planted.py`).

A tree of 50,000 files in 5,000 folders, 5,000 of them `.pyc` files in `__pycache__` folders
(the shape of a mid-sized Python project with its caches), made once under /var/tmp:

- one snapshot of the tree (`planted.take`): the first in a process (every folder read) and
  the next ones (only what changed is read again), wall and CPU time, median of N;
- a `bash` call of `true` through the real tool (bubblewrap, the supervisor, a snapshot before
  and after), in that tree and in an empty workspace, wall and this process's CPU time.

`--dependencies N` adds a `node_modules` of N folders (5 files each), where only repositories
are looked for below the top; `--venv N` a `.venv` of N packages (a `__pycache__` of 4 `.pyc`
files each), whose `.pyc` files are looked at after each command as the project's are.

The check after a command (`planted.undo`) is timed as usual and as at the end of a first walk
that gave up ("window check": every `.pyc` compared with the walk's start by its ctime).

Needs bubblewrap. Run it on one core, as the tests are (`taskset -c 0`):

    taskset -c 0 python bench/planted_walk.py [--repeat N] [--folders 5000] [--dependencies N]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from loopwright import ToolContext
from loopwright.builtin import bash
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy, planted
from loopwright.safety.sandbox.changes import Span, Window


def make_tree(root: Path, folders: int) -> None:
    """`folders` folders of 10 files on average, nested 3 deep: half are packages of 18
    sources, half their `__pycache__` with 2 `.pyc` files."""
    for index in range(folders // 2):
        package = root / f"p{index % 10}" / f"q{index % 100}" / f"m{index}"
        caches = package / "__pycache__"
        caches.mkdir(parents=True)
        for number in range(18):
            (package / f"f{number}.py").write_bytes(b"")
        for number in range(2):
            (caches / f"f{number}.cpython-311.pyc").write_bytes(b"")


def make_dependencies(root: Path, folders: int) -> None:
    """`folders` folders of 5 files in `node_modules`: packages of 10 folders each."""
    for index in range(folders):
        folder = root / "node_modules" / f"dep{index // 10}" / f"d{index % 10}"
        folder.mkdir(parents=True)
        for number in range(5):
            (folder / f"f{number}.js").write_bytes(b"")


def make_venv(root: Path, packages: int) -> None:
    """`packages` packages in `.venv`'s site-packages: 4 sources and their 4 `.pyc` files."""
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    for index in range(packages):
        caches = site / f"pkg{index}" / "__pycache__"
        caches.mkdir(parents=True)
        for number in range(4):
            (caches.parent / f"m{number}.py").write_bytes(b"")
            (caches / f"m{number}.cpython-311.pyc").write_bytes(b"")


def timed(step: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds (this process, every thread) of `step`."""
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu


async def timed_async(step: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    await step()
    return time.perf_counter() - wall, time.process_time() - cpu


def median_ms(samples: list[tuple[float, float]]) -> str:
    wall = statistics.median(sample[0] for sample in samples) * 1000
    cpu = statistics.median(sample[1] for sample in samples) * 1000
    return f"{wall:6.1f} ms wall, {cpu:6.1f} ms CPU"


def snapshots(root: Path, repeat: int) -> None:
    first = []
    for _ in range(max(3, repeat // 4)):
        planted._latest.pop(root, None)  # as in a new process
        first.append(timed(lambda: planted.take(root)))
    later = [timed(lambda: planted.take(root)) for _ in range(repeat)]
    print(f"snapshot, first in a process, median of {len(first)}: {median_ms(first)}")
    print(f"snapshot, the next ones,      median of {repeat}: {median_ms(later)}")
    checks, window = [], []
    for _ in range(repeat):
        checks.append(timed(functools.partial(planted.undo, planted.take(root))))
        before = planted.take(root)
        before.window = Window((Span(before.taken_ns),))  # as at the walk's end (`_finish`)
        window.append(timed(functools.partial(planted.undo, before)))
    print(f"check after a command (undo),       median of {repeat}: {median_ms(checks)}")
    print(f"window check at a first walk's end, median of {repeat}: {median_ms(window)}")


async def commands(root: Path, repeat: int, label: str) -> None:
    ctx = ToolContext(workdir=root, services={SANDBOX_SERVICE: SandboxPolicy()})

    async def true() -> None:
        await bash.invoke(bash.validate({"command": "true"}), ctx)

    planted._latest.pop(root, None)  # as in a new process
    first = await timed_async(true)
    later = [await timed_async(true) for _ in range(repeat)]
    print(f"`bash true`, {label}: first {first[0] * 1000:.0f} ms wall; "
          f"then, median of {repeat}: {median_ms(later)}")


async def main(repeat: int, folders: int, dependencies: int, venv: int) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as empty, \
            tempfile.TemporaryDirectory(dir="/var/tmp") as full:
        await commands(Path(empty), 3, "empty workspace (the probe)")  # probe once, warm up
        await commands(Path(empty), repeat, "empty workspace")
        make_tree(Path(full), folders)
        make_dependencies(Path(full), dependencies)
        make_venv(Path(full), venv)
        print(f"tree: {folders} folders, {folders * 10} files, {folders} .pyc; "
              f"node_modules: {dependencies} folders, {dependencies * 5} files; "
              f".venv: {venv} packages, {venv * 4} .pyc")
        snapshots(Path(full), repeat)
        await commands(Path(full), repeat, "in the tree")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--folders", type=int, default=5000)
    parser.add_argument("--dependencies", type=int, default=0)
    parser.add_argument("--venv", type=int, default=0)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.repeat, arguments.folders, arguments.dependencies,
                     arguments.venv))
