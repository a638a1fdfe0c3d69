"""Thousands of concurrent runs on one `Agent`: do they all finish, and at what cost?

Each run is ROUNDS tool rounds then an answer (ROUNDS + 1 model turns) against the fake model
server in a separate process (its CPU is not counted). Each setting runs in a fresh child
process so that its peak RSS is its own. Prints, per setting: runs completed, wall time, client
CPU per turn (user + system of the client process / turns), peak RSS, RSS per run (peak minus
the RSS before the runs started, / runs), the TCP connections the client opened and the most
that were open at once: more opened than were ever open together means some were closed and
replaced (churn). `--waves` splits the runs into waves `--gap` seconds apart (the wall time
counts the waves, not the gaps; RSS per run divides by the runs of one wave): connections idle
through a gap show whether idleness alone replaces them. The load average is printed with
every row.

    python bench/concurrency.py                       # 1,000 and 10,000 runs; 1,000 at 20 s
    python bench/concurrency.py --runs 10000 --delay 20
    python bench/concurrency.py --runs 10000 --waves 2 --gap 65
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_process import start_ready

from loopwright import Agent, tool
from loopwright.endpoints.base import max_connections

ROUNDS = 5
DEFAULT_SETTINGS = [(1000, 0.0), (10000, 0.0), (1000, 20.0)]


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(base_url: str, runs: int, waves: int, gap: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    connect, opened, most_open = loop.create_connection, [0], [0]
    transports: list[asyncio.BaseTransport] = []

    async def counted(*args: Any, **kwargs: Any) -> Any:
        opened[0] += 1
        made = await connect(*args, **kwargs)
        transports.append(made[0])
        # opened beyond the most open at once were reopened: a connection closed, then replaced
        most_open[0] = max(most_open[0], sum(not t.is_closing() for t in transports))
        return made

    loop.create_connection = counted  # type: ignore[method-assign]
    async with Agent("bench", base_url=base_url, api_key="k", tools=[lookup],
                     stream=False) as agent:
        before_rss, cpu, wall = rss_kb(), cpu_seconds(), 0.0
        completed, turns, failures = 0, 0, set()
        for wave in range(waves):
            if wave:
                await asyncio.sleep(gap)  # every connection idle
            started = time.perf_counter()
            results = await asyncio.gather(
                *(agent.run(f"task {n}") for n in range(wave, runs, waves)),
                return_exceptions=True)
            wall += time.perf_counter() - started
            # tallied and dropped: a wave's results held through the next would add to its RSS
            wave_completed, wave_turns, wave_failures = tally(results)
            completed, turns = completed + wave_completed, turns + wave_turns
            failures |= wave_failures
            del results
        cpu = cpu_seconds() - cpu
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    at_once = -(-runs // waves)
    return {"runs": runs, "completed": completed, "wall_s": wall,
            "cpu_ms_per_turn": 1000 * cpu / max(turns, 1), "peak_rss_mb": peak_kb / 1024,
            "rss_kb_per_run": (peak_kb - before_rss) / at_once, "connections": opened[0],
            "most_open": most_open[0],
            "failures": sorted(failures)[:3]}


def tally(results: list[Any]) -> tuple[int, int, set[str]]:
    """Runs completed with every round, model turns, and the first words of each failure."""
    done = [r for r in results if not isinstance(r, BaseException)
            and r.stop_reason == "completed" and r.turns == ROUNDS + 1]
    done_ids = {id(r) for r in done}  # not `r in done`: n² deep comparisons of results
    failures = {str(getattr(r, "error", r))[:120] for r in results if id(r) not in done_ids}
    turns = sum(getattr(r, "turns", 0) for r in results if not isinstance(r, BaseException))
    return len(done), turns, failures


def enough_open_files() -> None:
    """Raise the soft open-files limit to the hard one if the shared client's connections (and
    the fake server's side of them, a child of this process) might not fit under it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * max_connections() + 200
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        print(f"raised the open-files soft limit {soft} -> {hard} (need ~{need})",
              file=sys.stderr)


def one_setting(runs: int, delay: float, waves: int, gap: float) -> None:
    enough_open_files()
    server, base_url = start_ready(
        [sys.executable, str(Path(__file__).with_name("bench_server.py")), str(ROUNDS),
         str(delay)])
    try:
        print(json.dumps(asyncio.run(measure(base_url, runs, waves, gap))), flush=True)
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, help="one setting: this many concurrent runs")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per model reply")
    parser.add_argument("--waves", type=int, default=1, help="the runs in this many waves")
    parser.add_argument("--gap", type=float, default=65.0,
                        help="seconds idle between waves (default 65: past a minute)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        one_setting(args.runs, args.delay, args.waves, args.gap)
        return
    settings = [(args.runs, args.delay)] if args.runs else DEFAULT_SETTINGS
    print("| runs | model reply | completed | wall | client CPU/turn | peak RSS | RSS/run "
          "| connections opened | most open at once |")
    print("|---|---|---|---|---|---|---|---|---|")
    for runs, delay in settings:
        load_before = load_average()
        out = subprocess.run([sys.executable, __file__, "--child", "--runs", str(runs),
                              "--delay", str(delay), "--waves", str(args.waves),
                              "--gap", str(args.gap)], capture_output=True, text=True)
        load = f"  load average {load_before} before, {load_average()} after"
        if out.returncode != 0:
            print(f"| {runs:,} | {delay:g} s | failed: {out.stderr.strip()[-200:]} |\n{load}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {runs:,} | {delay:g} s | {r['completed']:,}/{runs:,} | {r['wall_s']:.1f} s "
              f"| {r['cpu_ms_per_turn']:.2f} ms | {r['peak_rss_mb']:.0f} MB "
              f"| {r['rss_kb_per_run']:.1f} KB | {r['connections']:,} | {r['most_open']:,} |",
              flush=True)
        print(load, flush=True)
        for failure in r["failures"]:
            print(f"  failure: {failure}")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
