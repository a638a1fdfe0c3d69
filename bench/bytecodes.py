"""Bytecodes a turn on the event loop's thread, by function and by file, for loopwright or the
bare httpx loop (hand_loops.py): where the instructions of bench/instructions.py go, in Python
terms. `sys.settrace` with `f_trace_opcodes` counts every bytecode the loop's thread runs in the
measured runs (not the warm-up ones); work on other threads (a `def` tool, the system prompt's
files) is not counted. The fake model server runs in a process of its own.

    python bench/bytecodes.py --mode anthropic_messages              # loopwright, 20 rounds
    python bench/bytecodes.py --mode anthropic_messages --side hand  # the bare loop
    python bench/bytecodes.py --rounds 0 --runs 5                    # a run of one turn
    python bench/bytecodes.py --top 60 --callers                     # library work by caller

The counts are exact and repeatable (no timing); tracing makes the runs ~50x slower.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

Key = tuple[str, int, str]
_PREFIXES = (str(Path(__file__).resolve().parents[1] / "src") + "/", "site-packages/",
             "/lib/python3.")


def short(path: str) -> str:
    """A file's path from its package down (loopwright/…, httpx/…, asyncio/…)."""
    for prefix in _PREFIXES:
        at = path.find(prefix)
        if at >= 0:
            rest = path[at + len(prefix):]
            return rest.split("/", 1)[1] if prefix == "/lib/python3." else rest
    return path


class Counter:
    """Bytecodes by function, and the library's by the nearest loopwright function calling it."""

    def __init__(self, callers: bool) -> None:
        self.by_function: collections.Counter[Key] = collections.Counter()
        self.by_caller: collections.Counter[tuple[Key, str]] = collections.Counter()
        self.callers = callers

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return self.opcode

    def opcode(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            self.by_function[(code.co_filename, code.co_firstlineno, code.co_qualname)] += 1
            if self.callers and "/loopwright/" not in code.co_filename:
                outer = frame.f_back
                while outer is not None and "/loopwright/" not in outer.f_code.co_filename:
                    outer = outer.f_back
                if outer is not None:
                    c = outer.f_code
                    self.by_caller[((c.co_filename, c.co_firstlineno, c.co_qualname),
                                    short(code.co_filename))] += 1
        return self.opcode


async def measure(args: argparse.Namespace, base_url: str, counter: Counter) -> int:
    """Turns of the measured runs (after three warm-up runs), counted by `counter`."""
    import httpx
    from hand_loops import HAND_LOOPS
    from overhead import lookup, lookup_sync  # the workload's tool, as bench/overhead.py's

    from loopwright import Agent
    from loopwright.endpoints.base import close_shared_client

    client = httpx.AsyncClient(timeout=60)
    agent = Agent("bench-model", base_url=base_url, api_key="k", api_mode=args.mode,
                  tools=[lookup if args.tool == "async" else lookup_sync],
                  stream=args.stream, max_turns=args.rounds + 5)  # as bench/overhead.py's

    async def one() -> int:
        if args.side == "loopwright":
            result = await agent.run("task 1")
            if result.stop_reason != "completed":
                raise RuntimeError(f"the run ended {result.stop_reason}")
            return result.turns
        return await HAND_LOOPS[args.mode](client, base_url, "task 1", stream=args.stream,
                                           rounds=args.rounds)

    for _ in range(3):
        await one()
    turns = 0
    sys.settrace(counter.trace)
    try:
        for _ in range(args.runs):
            turns += await one()
    finally:
        sys.settrace(None)
    await client.aclose()
    await close_shared_client()
    return turns


def report(counter: Counter, turns: int, runs: int, top: int) -> None:
    total = sum(counter.by_function.values())
    print(f"{total / turns:,.0f} bytecodes a turn ({total / runs:,.0f} a run of "
          f"{turns / runs:.0f} turns)")
    by_file: collections.Counter[str] = collections.Counter()
    for (path, _, _), n in counter.by_function.items():
        by_file[short(path)] += n
    print("\na turn, by file:")
    for path, n in by_file.most_common(top):
        print(f"{n / turns:9.1f}  {path}")
    print("\na turn, by function:")
    for (path, line, name), n in counter.by_function.most_common(top):
        print(f"{n / turns:9.1f}  {short(path)}:{line} {name}")
    if counter.by_caller:
        print("\na turn, library code by the loopwright function it runs under:")
        for ((path, line, name), library), n in counter.by_caller.most_common(top):
            print(f"{n / turns:9.1f}  {short(path)}:{line} {name} -> {library}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="chat_completions",
                        choices=["chat_completions", "responses", "anthropic_messages"])
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--side", default="loopwright", choices=["loopwright", "hand"])
    parser.add_argument("--tool", default="async", choices=["async", "def"])
    parser.add_argument("--rounds", type=int, default=20, help="tool rounds a run (default 20)")
    parser.add_argument("--runs", type=int, default=3, help="measured runs (default 3)")
    parser.add_argument("--top", type=int, default=40, help="rows of each table (default 40)")
    parser.add_argument("--callers", action="store_true",
                        help="also count library code by the loopwright function above it")
    args = parser.parse_args()
    from server_process import start_ready

    proc, base_url = start_ready([sys.executable, str(Path(__file__).with_name("bench_server.py")),
                                  str(args.rounds)])
    try:
        counter = Counter(args.callers)
        turns = asyncio.run(measure(args, base_url, counter))
    finally:
        proc.kill()
    report(counter, turns, args.runs, args.top)


if __name__ == "__main__":
    main()
