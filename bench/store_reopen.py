"""What `Agent.aclose()` closing the session store costs each `chat()` call.

`chat()` closes the agent after every call, so an agent made with `store="s.db"` (or a
`postgresql://` URL) opens its store again on each call: the file, its migrations check and the
store's thread (SQLite), or a connection (PostgreSQL). Compared with the same calls on a store
passed in as an object, which the agent leaves open. Wall time per `chat()` (one answer from the
fake model server, in this process), the median of CALLS calls after one warm-up; also the
client CPU per call (user + system time of this process, every thread included). The whole
calls are noisy on a busy machine, so the store's own part is timed alone too: `aclose()` and
the first call after it (which opens the store again), against that call on an open store.

    python bench/store_reopen.py [--calls N] [--postgres DSN]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from loopwright import Agent
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply


def per_call(store: Any, calls: int, session_id: str) -> tuple[float, float]:
    """Median wall ms and mean CPU ms of one `chat()` on an agent with `store`, each call one
    more turn of `session_id`."""
    with FakeModelServer([Reply("ok")] * (calls + 1)) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", store=store,
                      session_id=session_id)
        agent.chat("warm-up")
        walls = []
        cpu_started = time.process_time()
        for _ in range(calls):
            started = time.perf_counter()
            agent.chat("again")
            walls.append(time.perf_counter() - started)
        cpu = time.process_time() - cpu_started
    return statistics.median(walls) * 1000, cpu / calls * 1000


async def store_alone(spec: str, calls: int) -> tuple[float, float]:
    """Median ms of `aclose()` + the next `get()`, and of a `get()` on the open store."""
    store = open_store(spec)
    assert store is not None
    await store.create("bench")
    reopening, open_ = [], []
    for _ in range(calls):
        started = time.perf_counter()
        await store.aclose()
        await store.get("bench")
        reopening.append(time.perf_counter() - started)
        started = time.perf_counter()
        await store.get("bench")
        open_.append(time.perf_counter() - started)
    await store.aclose()
    return statistics.median(reopening) * 1000, statistics.median(open_) * 1000


def compare(name: str, spec: str, calls: int) -> None:
    import asyncio

    closing, staying = asyncio.run(store_alone(spec, calls))
    print(f"{name:>10}  the store alone: aclose + next call {closing:.2f} ms, a call on the "
          f"open store {staying:.2f} ms")
    reopened = per_call(spec, calls, "reopened")
    kept = open_store(spec)
    try:
        left_open = per_call(kept, calls, "left-open")  # the same file or database
    finally:
        if kept is not None:
            asyncio.run(kept.aclose())
    print(f"{name:>10}  closed and reopened: {reopened[0]:6.2f} ms wall, {reopened[1]:6.2f} ms "
          f"CPU   left open: {left_open[0]:6.2f} ms wall, {left_open[1]:6.2f} ms CPU   "
          f"difference: {reopened[0] - left_open[0]:+6.2f} ms wall, "
          f"{reopened[1] - left_open[1]:+6.2f} ms CPU a call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--postgres", metavar="DSN", help="also a PostgreSQL store (a database "
                        "this may write sessions to)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        compare("SQLite", str(Path(tmp) / "s.db"), args.calls)
    if args.postgres:
        compare("PostgreSQL", args.postgres, args.calls)


if __name__ == "__main__":
    main()
