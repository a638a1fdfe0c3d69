"""Linear time, checked without a clock bound: how the CPU time of one reading grows from a
small input to a large one. CPU time is the process's own (not the wall clock, which other
work on a shared machine stretches); a quadratic reading grows with the square of the input,
a linear one no faster than the input."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable


async def cpu_growth(read: Callable[[int], Awaitable[object]], small: int, large: int) -> float:
    """CPU time of `read(large)` over that of `read(small)`, the least of three tries each (a
    garbage collection may land in any one), after a first `read(small)` that warms up."""
    await read(small)
    least: list[float] = []
    for size in (small, large):
        tries: list[float] = []
        for _ in range(3):
            started = time.process_time()
            await read(size)
            tries.append(time.process_time() - started)
        least.append(min(tries))
    return least[1] / least[0]
