"""What the kernel counts for each thread of this process (Linux, /proc/self/task): CPU time in
nanoseconds and context switches, and a hop's median cost from them. Shared by
bench/store_overhead.py, bench/pool_hops.py and bench/batch_throughput.py."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path


def thread_cpu() -> dict[int, tuple[float, int, int]]:
    """Of each thread of this process: CPU seconds (user + system, from the scheduler's
    nanosecond count, /proc/.../schedstat), voluntary and involuntary context switches."""
    out = {}
    for task in os.listdir("/proc/self/task"):
        folder = Path(f"/proc/self/task/{task}")
        try:
            ran = int((folder / "schedstat").read_text().split()[0]) / 1e9
            status = (folder / "status").read_text()
        except OSError:  # the thread ended since the listing
            continue
        switches = dict(line.split(":\t") for line in status.splitlines()
                        if line.endswith(tuple("0123456789")) and "ctxt_switches" in line)
        out[int(task)] = (ran, int(switches["voluntary_ctxt_switches"]),
                          int(switches["nonvoluntary_ctxt_switches"]))
    return out


def context_switches() -> int:
    """Voluntary and involuntary context switches of every thread of this process."""
    return sum(voluntary + involuntary for _, voluntary, involuntary in thread_cpu().values())


async def per_hop(round_of_hops: Callable[[], Awaitable[int]],
                  repeats: int) -> tuple[float, float]:
    """Median CPU microseconds (every thread) and context switches a hop over `repeats` rounds
    of `round_of_hops` (which returns how many hops it made), after one round to warm up."""
    samples = []
    for _ in range(repeats + 1):
        cpu, switched = time.process_time(), context_switches()
        done = await round_of_hops()
        samples.append(((time.process_time() - cpu) / done * 1e6,
                        (context_switches() - switched) / done))
    return (statistics.median(us for us, _ in samples[1:]),
            statistics.median(n for _, n in samples[1:]))
