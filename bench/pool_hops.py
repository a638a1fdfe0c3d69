"""A bare hop to the `def`-tool pool (worker_threads.py) and back: CPU and context switches.

`run_in_thread` of a function that does nothing, awaited, from one task or from several at once;
the CPU (process time, every thread) and the context switches (every thread's voluntary and
involuntary, /proc/self/task, Linux) per hop, the median of REPEATS rounds of COUNT hops, as
bench/thread_stats.py's `per_hop` takes them.

    python bench/pool_hops.py                    # one task, then 8 at once
    taskset -c 0 python bench/pool_hops.py       # on one core
    python bench/pool_hops.py --tasks 1 --repeats 21
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from thread_stats import per_hop

from loopwright.worker_threads import run_in_thread


def nothing() -> None:
    return None


async def hops(tasks: int, repeats: int, count: int) -> tuple[float, float]:
    """Median CPU microseconds and context switches a hop, `tasks` tasks hopping at once."""
    async def hopper(n: int) -> None:
        for _ in range(n):
            await run_in_thread(nothing)

    async def round_of_hops() -> int:
        await asyncio.gather(*(hopper(count // tasks) for _ in range(tasks)))
        return count // tasks * tasks

    return await per_hop(round_of_hops, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, action="append", help="tasks at once (default 1, 8)")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--count", type=int, default=3000, help="hops a round")
    args = parser.parse_args()
    for tasks in args.tasks or [1, 8]:
        us, switched = asyncio.run(hops(tasks, args.repeats, args.count))
        print(f"{tasks} task(s): {us:.1f} us of CPU, {switched:.2f} context switches a hop "
              f"(load average {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
