"""The sandbox's limits (issue 29, item 4): what they cost and how fast they act.

- the cost of the supervisor per command: `true` through the real bash tool with the default
  limits (supervised) and with every limit off (no supervisor), median of N runs;
- how long a fork bomb runs before the supervisor stops it, and how many processes the sandbox
  held at most (sampled on the host from bubblewrap's PID namespace while it ran);
- how long `cat /dev/zero > file` runs before the file-size limit stops it.

Needs bubblewrap. A fork bomb is really started, with `sandbox_max_processes = 64`.

    python bench/sandbox_limits.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

from loopwright import ToolContext, ToolError
from loopwright.builtin import bash
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy
from loopwright.safety.sandbox.policy import SandboxLimits


def context(workdir: Path, limits: SandboxLimits) -> ToolContext:
    return ToolContext(workdir=workdir, services={SANDBOX_SERVICE: SandboxPolicy(limits=limits)})


async def timed(ctx: ToolContext, command: str) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        text = str(await bash.invoke(bash.validate({"command": command, "timeout": 60}), ctx))
    except ToolError as exc:
        text = str(exc)
    return time.perf_counter() - start, text


def sandbox_processes() -> int:
    """Processes on the host that live in a PID namespace other than ours (the sandbox's)."""
    own = os.readlink("/proc/self/ns/pid")
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/{name}/ns/pid") != own
    return count


async def bomb(workdir: Path) -> tuple[float, int, str]:
    ctx = context(workdir, SandboxLimits(processes=64))
    task = asyncio.ensure_future(timed(ctx, "bomb() { bomb | bomb & }; bomb; sleep 30"))
    peak = 0
    while not task.done():
        peak = max(peak, await asyncio.to_thread(sandbox_processes))
        await asyncio.sleep(0.005)
    seconds, text = task.result()
    return seconds, peak, text.strip().splitlines()[0]


async def main(repeat: int) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
        workdir = Path(directory)
        supervised = context(workdir, SandboxLimits())
        bare = context(workdir, SandboxLimits(processes=0, file_mb=0, memory_mb=0, tmp_mb=0))
        await timed(supervised, "true")  # the availability probe, once
        with_limits = [(await timed(supervised, "true"))[0] for _ in range(repeat)]
        without = [(await timed(bare, "true"))[0] for _ in range(repeat)]
        print(f"`true` in the sandbox, median of {repeat}: "
              f"{statistics.median(with_limits) * 1000:.1f} ms with the limits (supervisor), "
              f"{statistics.median(without) * 1000:.1f} ms without")
        seconds, peak, first = await bomb(workdir)
        print(f"fork bomb, sandbox_max_processes = 64: stopped after {seconds:.2f} s, "
              f"at most {peak} processes seen in the sandbox ({first!r})")
        fill = context(workdir, SandboxLimits(file_mb=64))
        seconds, text = await timed(fill, "cat /dev/zero > fill.bin")
        print(f"cat /dev/zero > file, sandbox_max_file_mb = 64: stopped after {seconds:.2f} s "
              f"({text.strip().splitlines()[0]!r})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    asyncio.run(main(parser.parse_args().repeat))
