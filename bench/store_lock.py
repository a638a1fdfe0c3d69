"""Does a locked session database slow down other runs in the same event loop? (It must not.)

One event loop runs an unrelated agent (no store) over and over, each run five tool rounds
against the fake model server (its own process). First on its own; then while another agent in
the same loop is stuck writing its session to an SQLite file that a second process holds locked
for the whole measurement (`BEGIN EXCLUSIVE`). Reported: the unrelated run's latency (median,
p95, max) in both phases. Store calls run on the store's own worker thread, so the two phases
should match; a store call on the event loop would stall every run for the lock's duration.

    python bench/store_lock.py                # 30 runs per phase
    python bench/store_lock.py --runs 100 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from server_process import start_ready

from loopwright import Agent, tool
from loopwright.store.sqlite import SQLiteStore

ROUNDS = 5
ALLOWED_SLOWDOWN = 1.5  # median with the lock over median without (generous: shared CPUs)


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


async def latencies(agent: Agent, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await agent.run("Look the keys up.")
        out.append(time.perf_counter() - started)
        if result.stop_reason != "completed":
            raise RuntimeError(f"the unrelated run ended {result.stop_reason}: {result.error}")
    return out


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2),
            "max_ms": round(ordered[-1] * 1000, 2)}


async def measure(base_url: str, runs: int, directory: Path) -> dict[str, object]:
    unrelated = Agent("bench-model", base_url=base_url, api_key="k", tools=[lookup])
    await latencies(unrelated, 3)  # warm up: connections, imports
    alone = await latencies(unrelated, runs)

    db = directory / "locked.db"
    SQLiteStore(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock throughout
    stuck_agent = Agent("bench-model", base_url=base_url, api_key="k", tools=[lookup],
                        store=SQLiteStore(db, timeout=60))
    stuck = asyncio.ensure_future(stuck_agent.run("Look the keys up."))
    await asyncio.sleep(0.2)
    try:
        if stuck.done():
            raise RuntimeError("the locked agent was not waiting on its database")
        locked = await latencies(unrelated, runs)
        waited = not stuck.done()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    stored = await stuck  # and it completes once the lock is gone
    return {"runs": runs, "rounds": ROUNDS, "alone": summary(alone),
            "while_locked": summary(locked), "locked_run_waited": waited,
            "locked_run_after_release": stored.stop_reason}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")
    args = parser.parse_args()
    server, base_url = start_ready(
        [sys.executable, str(Path(__file__).with_name("bench_server.py")), str(ROUNDS)])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(measure(base_url, args.runs, Path(tmp)))
    finally:
        server.kill()
        server.wait()
    alone, locked = result["alone"], result["while_locked"]
    assert isinstance(alone, dict) and isinstance(locked, dict)
    ok = locked["median_ms"] <= alone["median_ms"] * ALLOWED_SLOWDOWN and bool(
        result["locked_run_waited"])
    if args.json:
        print(json.dumps({**result, "ok": ok}))
    else:
        print(f"unrelated run ({ROUNDS} tool rounds), {args.runs} runs per phase")
        for name, row in (("alone", alone), ("while another store is locked", locked)):
            print(f"  {name:<32} median {row['median_ms']:8.2f} ms   p95 {row['p95_ms']:8.2f} ms"
                  f"   max {row['max_ms']:8.2f} ms")
        print(f"  the locked agent waited throughout: {result['locked_run_waited']}, then "
              f"ended {result['locked_run_after_release']}")
        print(f"  verdict: {'OK' if ok else 'SLOWED DOWN'} (allowed: median x{ALLOWED_SLOWDOWN})")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
