"""What the session store costs a run, and what `loopwright serve` costs over the library.

The workload is bench/overhead.py's: ROUNDS rounds of one read-only tool call, then an answer
(ROUNDS + 1 turns a run), against the fake model server in its own process. Measured, as client
CPU per turn (user + system time of the process running the agent, its store thread included,
divided by the turns completed; the median of REPEATS batches of RUNS runs one after another):

- the library with no store, with SQLite (a file in a temporary directory) and with PostgreSQL
  (`--postgres DSN`, else a throwaway server started as tests/pg_server.py does);
- `loopwright serve` (the app the command runs, in its own process, one SSE client per run, as
  the page is) with SQLite and with PostgreSQL, against the library with the same store.

    python bench/store_overhead.py                 # everything
    python bench/store_overhead.py --quick         # fewer runs
    python bench/store_overhead.py --no-serve --json
    python bench/store_overhead.py --instructions  # the library under callgrind (valgrind)
    python bench/store_overhead.py --instructions --no-gc  # the same, cycle collector off
    python bench/store_overhead.py --instructions --no-gc --warm  # each count after 4 runs
    python bench/store_overhead.py --breakdown     # SQLite: CPU by thread, WAL pages a turn
    python bench/store_overhead.py --parts         # SQLite: the recorder, the hop, the SQL
    python bench/store_overhead.py --replay        # SQLite: its writes alone, replayed
    python bench/store_overhead.py --hops          # a bare hop to the store's thread and back
    python bench/store_overhead.py --no-serve --pin  # this process on CPU 0, servers on CPU 1

`--instructions` counts instead of timing: each store's workload runs in a child under
`valgrind --tool=callgrind`, once with 2 runs and once with 12, and the difference divided by the
110 turns between them is the instructions per turn of the process, every thread included (and
each thread's own: the event loop's, the store's, the pool's). The store is made and migrated by
a run before either count (until the eleventh session of issue 30 the 2-run count made the
SQLite file and the 12-run count found it made, so ~0.3 M a turn of the schema's creation was
taken off SQLite's figure). It is not moved by the machine's
load (CPU time is: a hop to the store's thread and back costs more on a busy machine), but it
does not see cache misses, the kernel or thread wake-ups either. `--no-gc` counts with Python's
cycle collector off in the child: with it on, a full collection falling between the two counts
in one store's child and not in another's moves that store's figure by ~0.15 M a turn.
`--warm` takes each count after `WARM_RUNS` runs of the same process (callgrind's counters
zeroed then with `callgrind_control -z`, dumped after the counted runs with `-d`): what a
process does once (an import, a first lease renewal, a module a run loads late) falls into
the 2-run count in one child and the 12-run count in another, which moved a cold figure by
up to ~0.04 M a turn between two counts of one tree (issue 30's twelfth session).

`--breakdown` runs the workload with SQLite in this process and splits its cost: the CPU and the
context switches of the event loop's thread and of the store's thread (from /proc/self/task,
Linux: the scheduler's nanoseconds, not clock ticks), and the pages a
turn writes to the WAL, by table and index (with automatic checkpoints off for the count, so the
file only grows; SQLite's `dbstat` names the B-tree of each page).

`--parts` splits SQLite's cost a turn in three, each store adding one part to the one before:
the recorder alone (its writes end at once on the loop's thread: no hop, no SQL), the hop to
the store's thread and back (the SQL left out), then SQLite whole.

`--replay` takes the SQL alone: the write batches of 12 runs (captured at `write_batch`) are
written again into a fresh file, in this thread (no hop, hot caches), CPU per turn of the
writes, the median of REPEATS replays of 10 rounds: "fresh", each round into sessions of its own
(as the bench's runs: a new session each); "resumed", each round into the same 12 sessions again
(each run's rows going after those of the sessions made since, as a resumed session's do);
with the part of it spent in the kernel (`os.times`, in clock ticks: a median over many turns).

`--hops` takes the hop alone: `ThreadedStore.start_batch` over a store whose write does nothing,
awaited, then one round of the event loop; CPU (both threads) and context switches a hop.

Targets (issue 30): SQLite <= 1.3x no store, PostgreSQL <= 1.6x no store; serve <= 1.5x the
library with the same store.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from server_process import (  # bench/ is on the path: the script's own folder
    serve_until_stopped,
    start_ready,
)
from thread_stats import per_hop, thread_cpu

from loopwright import Agent, tool
from loopwright.endpoints.base import close_shared_client

HERE = Path(__file__).resolve()

ROUNDS = 10
TOKEN = "bench-token-0123456789abcdef"


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


# --- the library ------------------------------------------------------------------------------


async def library(base_url: str, stores: dict[str, Any], runs: int, repeats: int
                  ) -> dict[str, float]:
    """Median client CPU milliseconds per turn of `runs` runs in a row, for each store; the
    stores take turns batch by batch, so a change in the machine's load hits them alike."""
    agents = {name: Agent("bench-model", base_url=base_url, api_key="k", tools=[lookup],
                          store=store, max_turns=ROUNDS + 5) for name, store in stores.items()}
    samples: dict[str, list[float]] = {name: [] for name in stores}
    try:
        for batch in range(repeats + 1):  # the first batch warms up (imports, connections)
            for name, agent in agents.items():
                cpu, turns = time.process_time(), 0
                for _ in range(runs):
                    result = await agent.run("look the keys up")
                    if result.stop_reason != "completed":
                        raise RuntimeError(f"{name}: the run ended {result.stop_reason}: "
                                           f"{result.error}")
                    turns += result.turns
                if batch:
                    samples[name].append((time.process_time() - cpu) / turns * 1000)
    finally:
        for agent in agents.values():
            await agent.aclose()
        await close_shared_client()
    return {name: statistics.median(values) for name, values in samples.items()}


# --- serve ------------------------------------------------------------------------------------


def serve_child(base_url: str, store_spec: str, workdir: str) -> None:
    """The app `loopwright serve` runs, with `store_spec` and the workload's tool."""
    from loopwright.serve.app import ServeOptions, create_app
    from loopwright.store import open_store

    app = create_app(ServeOptions(token=TOKEN, store=open_store(store_spec), agent_options={
        "model": "bench-model", "base_url": base_url, "api_key": "k", "tools": [lookup],
        "workdir": workdir, "max_turns": ROUNDS + 5}))
    serve_until_stopped(app)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def serve(base_url: str, store_spec: str, runs: int, repeats: int) -> float:
    """Median CPU milliseconds per turn of the serve process for `runs` runs in a row."""
    import httpx

    with tempfile.TemporaryDirectory() as workdir:
        process, url = start_ready([sys.executable, str(HERE), "--serve-child", base_url,
                                    store_spec, workdir])
        try:
            async with httpx.AsyncClient(base_url=url, timeout=120, headers={
                    "authorization": f"Bearer {TOKEN}"}) as client:
                samples = []
                for batch in range(repeats + 1):
                    cpu = cpu_seconds(process.pid)
                    for _ in range(runs):
                        await one_served_run(client)
                    if batch:
                        samples.append((cpu_seconds(process.pid) - cpu) / (runs * (ROUNDS + 1))
                                       * 1000)
                return statistics.median(samples)
        finally:
            process.terminate()
            process.wait(10)


async def one_served_run(client: Any) -> None:
    """Start a run and read its event stream to the end, as the page does."""
    started = (await client.post("/runs", json={"prompt": "look the keys up"})).json()
    async with client.stream("GET", f"/runs/{started['run_id']}/events") as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and json.loads(line[6:]).get("type") in (
                    "done", "error", "cancelled"):
                return


# --- the whole ----------------------------------------------------------------------------------


@contextlib.contextmanager
def postgres(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    sys.path.insert(0, str(HERE.parent.parent / "tests"))
    from pg_server import PG_MISSING, fresh_database, running_postgres

    with running_postgres() as server:
        if server is None:
            raise SystemExit(f"no PostgreSQL: give --postgres DSN, or install {PG_MISSING}")
        yield fresh_database(server)


async def measure(args: argparse.Namespace, base_url: str, pg_dsn: str) -> dict[str, Any]:
    runs, repeats = (3, 5) if args.quick else (args.runs, args.repeats)
    with tempfile.TemporaryDirectory() as scratch:
        sqlite = str(Path(scratch) / "sessions.db")
        row: dict[str, Any] = {"rounds": ROUNDS, "turns_per_run": ROUNDS + 1, "runs": runs,
                               "repeats": repeats}
        measured = await library(base_url, {"none": None, "sqlite": sqlite,
                                            "postgres": pg_dsn}, runs, repeats)
        row.update({f"{name}_ms": ms for name, ms in measured.items()})
        row["sqlite_ratio"] = row["sqlite_ms"] / row["none_ms"]
        row["postgres_ratio"] = row["postgres_ms"] / row["none_ms"]
        if not args.no_serve:
            row["serve_sqlite_ms"] = await serve(base_url, sqlite, runs, repeats)
            row["serve_postgres_ms"] = await serve(base_url, pg_dsn, runs, repeats)
            row["serve_sqlite_ratio"] = row["serve_sqlite_ms"] / row["sqlite_ms"]
            row["serve_postgres_ratio"] = row["serve_postgres_ms"] / row["postgres_ms"]
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}


# --- instructions (callgrind) -------------------------------------------------------------------

COUNTED_RUNS = (2, 12)


def count_child(base_url: str, store_spec: str, runs: int, collect: bool = True,
                warm: int = 0) -> None:
    """`runs` runs of the workload in a row (the process callgrind counts; `collect` False:
    with Python's cycle collector off). `warm`: that many runs first, then "ready" on stdout
    and a line awaited on stdin (the counters are zeroed meanwhile), and after the runs
    "done" and another line (the counters are dumped meanwhile)."""
    if not collect:
        import gc

        gc.disable()

    async def go() -> None:
        agent = Agent("bench-model", base_url=base_url, api_key="k", tools=[lookup],
                      store=store_spec or None, max_turns=ROUNDS + 5)
        try:
            for _ in range(warm):
                await agent.run("look the keys up")
            if warm:
                await told("ready")
            for _ in range(runs):
                result = await agent.run("look the keys up")
                if result.stop_reason != "completed":
                    raise SystemExit(f"the run ended {result.stop_reason}: {result.error}")
            if warm:
                await told("done")
        finally:
            await agent.aclose()
            await close_shared_client()

    asyncio.run(go())


async def told(word: str) -> None:
    """`word` on stdout, then a line from stdin awaited off the loop (the parent's go-ahead)."""
    print(word, flush=True)
    await asyncio.to_thread(sys.stdin.readline)


WARM_RUNS = 4


def warm_count(command: list[str], out_file: Path) -> dict[int, int]:
    """Each thread's instructions over the runs of `command` (a `--count-child` with warm-up
    runs) after its warm-up: callgrind's counters zeroed once it is warm (`callgrind_control
    -z`) and dumped once its runs are done (`-d`), so neither the imports, the first-time
    work of the runs before nor the teardown is in it."""
    import subprocess

    child = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--separate-threads=yes",
         f"--callgrind-out-file={out_file}", *command],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdin is not None and child.stdout is not None
    for word, control in (("ready", "-z"), ("done", "-d")):
        if child.stdout.readline().strip() != word:
            child.kill()
            raise SystemExit(f"the counted child failed before {word!r}")
        subprocess.run(["callgrind_control", control, str(child.pid)], capture_output=True,
                       check=True)
        child.stdin.write("\n")
        child.stdin.flush()
    child.wait()
    return thread_counts(out_file.parent, f"{out_file.name}.1")


def instructions(base_url: str, stores: dict[str, str], *, collect: bool = True,
                 warm: bool = False) -> dict[str, dict[str, float]]:
    """Instructions per turn of the workload with each store, the process's ("all") and each
    thread's ("thread 1" the event loop's; see `--instructions`); `warm`: each count taken
    after `WARM_RUNS` runs (`warm_count`)."""
    import subprocess

    out: dict[str, dict[str, float]] = {}
    for name, spec in stores.items():
        if spec:  # made and migrated first, so neither count has the schema's creation in it
            subprocess.run([sys.executable, str(HERE), "--count-child", base_url, spec, "1"],
                           capture_output=True, check=True)
        counts = []
        with tempfile.TemporaryDirectory() as scratch:
            for runs in COUNTED_RUNS:
                if warm:
                    counts.append(warm_count(
                        [sys.executable, str(HERE), "--count-child", base_url, spec, str(runs),
                         "1" if collect else "0", str(WARM_RUNS)], Path(scratch) / f"{runs}.out"))
                    continue
                done = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--separate-threads=yes",
                     f"--callgrind-out-file={scratch}/{runs}.out", sys.executable, str(HERE),
                     "--count-child", base_url, spec, str(runs), "1" if collect else "0"],
                    capture_output=True, text=True, check=False)
                if done.returncode or "refs:" not in done.stderr:
                    raise SystemExit(f"{name}: the counted child failed: {done.stderr[-2000:]}")
                counts.append(thread_counts(Path(scratch), f"{runs}.out"))
        turns = (COUNTED_RUNS[1] - COUNTED_RUNS[0]) * (ROUNDS + 1)
        out[name] = {f"thread {n}": (counts[1].get(n, 0) - counts[0].get(n, 0)) / turns
                     for n in sorted(counts[1])}
        out[name]["all"] = sum(out[name].values())
    return out


def thread_counts(folder: Path, name: str) -> dict[int, int]:
    """Instructions of each thread (callgrind's `summary:` of its `NAME-NN` file) by its
    number."""
    found = {}
    for part in folder.glob(f"{name}-*"):
        summary = next(line for line in part.read_text().splitlines()
                       if line.startswith("summary:"))
        found[int(part.name.rsplit("-", 1)[1])] = int(summary.split()[1])
    return found


def print_instructions(base_url: str, pg_dsn: str, *, collect: bool, warm: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        counted = instructions(base_url, {"none": "", "sqlite": str(Path(scratch) / "s.db"),
                                          "postgres": pg_dsn}, collect=collect, warm=warm)
    none = counted["none"]["all"]
    print(f"instructions per turn (callgrind, the whole process; load average "
          f"{os.getloadavg()[0]:.1f}, which does not move these; cycle collector "
          f"{'on' if collect else 'off'}{f'; after {WARM_RUNS} runs' if warm else ''})")
    for name, label in (("none", "no store  "), ("sqlite", "SQLite    "),
                        ("postgres", "PostgreSQL")):
        threads = ", ".join(f"{key} {value / 1e6:.3f} M" for key, value in counted[name].items()
                            if key != "all")
        print(f"  library, {label} {counted[name]['all'] / 1e6:7.3f} M  "
              f"x{counted[name]['all'] / none:.3f}  ({threads})")


# --- where SQLite's cost goes -------------------------------------------------------------------

WAL_FRAME_HEADER, WAL_HEADER = 24, 32


async def breakdown(base_url: str, runs: int, *, sqlite: bool) -> dict[str, float]:
    """Per turn, with SQLite or no store: CPU ms of the loop's thread and of the others (the
    store's), and WAL pages written."""
    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.threaded import ThreadedStore

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "s.db"
        store = SQLiteStore(path) if sqlite else None
        if store is not None:
            store._db.execute("PRAGMA wal_autocheckpoint = 0")  # the WAL only grows
        page = 4096 if store is None else store._db.execute("PRAGMA page_size").fetchone()[0]
        agent = Agent("bench-model", base_url=base_url, api_key="k", tools=[lookup],
                      store=ThreadedStore(store) if store is not None else None,
                      max_turns=ROUNDS + 5)
        wal = path.with_name("s.db-wal")
        try:
            await agent.run("look the keys up")  # warm up
            size = wal.stat().st_size if wal.exists() else WAL_HEADER
            before, turns = thread_cpu(), 0
            for _ in range(runs):
                turns += (await agent.run("look the keys up")).turns
            after = thread_cpu()
            trees = pages_by_tree(store, wal, max(size, WAL_HEADER), page) if store else {}
        finally:
            await agent.aclose()
            await close_shared_client()
    spent = {tid: [now - then for now, then in zip(after[tid], before.get(tid, (0, 0, 0)),
                                                  strict=True)] for tid in after}
    loop = spent.pop(os.getpid(), [0, 0, 0])
    others = [sum(values) for values in zip(*spent.values(), strict=True)] or [0, 0, 0]
    return {"loop_thread_ms": loop[0] / turns * 1000, "other_threads_ms": others[0] / turns * 1000,
            "loop_switches": (loop[1] + loop[2]) / turns,
            "other_switches": (others[1] + others[2]) / turns,
            "wal_pages": sum(trees.values()) / turns,
            **{f"pages {tree}": count / turns for tree, count in trees.items()}}


def pages_by_tree(store: Any, wal: Path, start: int, page: int) -> dict[str, int]:
    """How many WAL frames from `start` on hold a page of each table or index (SQLite's
    `dbstat` tells which B-tree a page belongs to; page 1 is the file's header too)."""
    import struct

    data = wal.read_bytes()[start:]
    step = page + WAL_FRAME_HEADER
    numbers = [struct.unpack(">I", data[at:at + 4])[0]
               for at in range(0, len(data) - step + 1, step)]
    owner = dict(store._db.execute("SELECT pageno, name FROM dbstat").fetchall())
    counts: dict[str, int] = {}
    for number in numbers:
        tree = owner.get(number, "free list") + (" (page 1)" if number == 1 else "")
        counts[tree] = counts.get(tree, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def print_breakdown(base_url: str, runs: int) -> None:
    print(f"per turn, {runs} runs each (load average {os.getloadavg()[0]:.1f}):")
    for label, sqlite in (("no store", False), ("SQLite  ", True)):
        split = asyncio.run(breakdown(base_url, runs, sqlite=sqlite))
        print(f"  {label}  loop thread {split['loop_thread_ms']:.3f} ms, other threads "
              f"{split['other_threads_ms']:.3f} ms; context switches "
              f"{split['loop_switches']:.2f} / {split['other_switches']:.2f}; "
              f"{split['wal_pages']:.1f} WAL pages")
        for name, count in split.items():
            if name.startswith("pages ") and count >= 0.05:
                print(f"      {count:5.2f}  {name[6:]}")


def part_stores(directory: Path) -> dict[str, Any]:
    """The stores of `--parts`, each adding one part of SQLite's cost to the one before: the
    recorder alone (writes end at once, on the loop's thread: no hop, no SQL), the hop to the
    store's thread (the writes' SQL left out), and SQLite whole."""
    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.threaded import ThreadedStore

    class WithoutSQL(SQLiteStore):
        def write_batch(self, session_id: str, writes: Any) -> None:
            return None

    class WithoutHop(ThreadedStore):
        def start_batch(self, session_id: str, writes: Any) -> asyncio.Future[None]:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done

    return {"none": False, "recorder": WithoutHop(WithoutSQL(directory / "recorder.db")),
            "hop": ThreadedStore(WithoutSQL(directory / "hop.db")),
            "sqlite": str(directory / "sqlite.db")}


def print_parts(base_url: str, runs: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        ms = asyncio.run(library(base_url, part_stores(Path(directory)), runs, repeats))
    print(f"client CPU per turn, median of {repeats} batches of {runs} runs (load average "
          f"{os.getloadavg()[0]:.1f}); each part added to the one above:")
    previous = None
    for name, value in ms.items():
        added = "" if previous is None else f"  +{value - previous:.3f} ms"
        print(f"  {name:9} {value:7.3f} ms  x{value / ms['none']:.3f}{added}")
        previous = value


def replay(base_url: str, repeats: int) -> dict[str, float]:
    """CPU microseconds a turn of the workload's SQLite writes alone (see `--replay`)."""
    import copy

    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.threaded import ThreadedStore
    from loopwright.store.writes import OpenSession

    batches: list[tuple[str, Any]] = []

    class Capture(SQLiteStore):
        def write_batch(self, session_id: str, writes: Any) -> None:
            batches.append((session_id, copy.deepcopy(list(writes))))
            super().write_batch(session_id, writes)

    async def capture(path: Path) -> int:
        agent = Agent("bench-model", base_url=base_url, api_key="k", tools=[lookup],
                      store=ThreadedStore(Capture(path)), max_turns=ROUNDS + 5)
        try:
            return sum([(await agent.run("look the keys up")).turns for _ in range(12)])
        finally:
            await agent.aclose()
            await close_shared_client()

    with tempfile.TemporaryDirectory() as scratch:
        turns = asyncio.run(capture(Path(scratch) / "capture.db"))
        sessions = list(dict.fromkeys(session_id for session_id, _ in batches))
        # a session the agent made up its id for is opened by its first batch (OpenSession)
        opened = {session_id for session_id, writes in batches
                  if any(isinstance(w, OpenSession) for w in writes)}
        out: dict[str, float] = {}
        for mode in ("fresh", "resumed"):
            samples, system = [], []
            for number in range(repeats):
                store = SQLiteStore(Path(scratch) / f"{mode}{number}.db")
                store._db.execute("PRAGMA wal_autocheckpoint = 0")  # as `--breakdown`
                spent = kernel = 0.0
                for round_ in range(10):
                    suffix = f"-{round_}" if mode == "fresh" or round_ == 0 else "-0"
                    for session_id in sessions:
                        if session_id not in opened:
                            store.open_session(session_id + suffix, "bench")
                    cpu, times = time.process_time(), os.times()
                    for session_id, writes in batches:
                        store.write_batch(session_id + suffix, writes)
                    spent += time.process_time() - cpu
                    kernel += os.times().system - times.system
                store.close()
                samples.append(spent / (10 * turns) * 1e6)
                system.append(kernel / (10 * turns) * 1e6)
            out[mode] = statistics.median(samples)
            out[f"{mode}_system"] = statistics.median(system)
    return out


def hops(repeats: int, count: int = 3000) -> tuple[float, float]:
    """CPU microseconds and context switches (both threads) of one bare hop to the SQLite
    store's thread and back: `start_batch` with a store whose write does nothing, awaited,
    then one round of the event loop; the median of `repeats` rounds of `count` hops."""
    from loopwright.store.sqlite import SQLiteStore
    from loopwright.store.threaded import ThreadedStore

    class WithoutSQL(SQLiteStore):
        def write_batch(self, session_id: str, writes: Any) -> None:
            return None

    async def measure(store: ThreadedStore) -> tuple[float, float]:
        async def round_of_hops() -> int:
            for _ in range(count):
                await store.start_batch("s", [])
                await asyncio.sleep(0)
            return count

        try:
            return await per_hop(round_of_hops, repeats)
        finally:
            await store.aclose()

    with tempfile.TemporaryDirectory() as scratch:
        return asyncio.run(measure(ThreadedStore(WithoutSQL(Path(scratch) / "h.db"))))


def pinned_here(pin: bool) -> None:
    """With `--pin`, this process (the measured one) on CPU 0, once the servers it started
    are on CPU 1: on a machine of two cores no server takes the measured process's core or
    its caches, and the store's thread shares the event loop's core (figures with and
    without it are in docs/benchmarks.md)."""
    if pin:
        os.sched_setaffinity(0, {0})


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-child":
        serve_child(*sys.argv[2:5])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--count-child":
        count_child(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                    collect=len(sys.argv) < 6 or sys.argv[5] != "0",
                    warm=int(sys.argv[6]) if len(sys.argv) > 6 else 0)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per batch")
    parser.add_argument("--repeats", type=int, default=11, help="batches measured")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-serve", action="store_true")
    parser.add_argument("--postgres", help="a PostgreSQL DSN (default: start a throwaway one)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing")
    parser.add_argument("--no-gc", action="store_true",
                        help="with --instructions: Python's cycle collector off in the child")
    parser.add_argument("--warm", action="store_true",
                        help=f"with --instructions: each count after {WARM_RUNS} runs, its "
                             "counters zeroed then (callgrind_control)")
    parser.add_argument("--breakdown", action="store_true",
                        help="SQLite only: CPU by thread and WAL pages a turn")
    parser.add_argument("--parts", action="store_true",
                        help="SQLite's CPU a turn split: the recorder, the hop, the SQL")
    parser.add_argument("--replay", action="store_true",
                        help="SQLite's writes alone, replayed in this thread")
    parser.add_argument("--hops", action="store_true",
                        help="a bare hop to the SQLite store's thread and back, alone")
    parser.add_argument("--pin", action="store_true",
                        help="the measured process on CPU 0, every server it starts on CPU 1")
    args = parser.parse_args()
    if args.pin:  # the servers started from here on inherit CPU 1 (`pinned_here`)
        os.sched_setaffinity(0, {1})
    if args.hops:
        pinned_here(args.pin)
        us, switched = hops(args.repeats)
        print(f"a bare hop to the store's thread and back, median of {args.repeats} rounds "
              f"(load average {os.getloadavg()[0]:.1f}): {us:.1f} us of CPU, {switched:.2f} "
              "context switches")
        return
    model, base_url = start_ready([sys.executable, str(HERE.with_name("bench_server.py")),
                                   str(ROUNDS)])
    try:
        if args.breakdown:
            pinned_here(args.pin)
            print_breakdown(base_url, args.runs * args.repeats)
            return
        if args.parts:
            pinned_here(args.pin)
            print_parts(base_url, args.runs, args.repeats)
            return
        if args.replay:
            pinned_here(args.pin)
            us = replay(base_url, args.repeats)
            print(f"SQLite's writes replayed, CPU per turn, median of {args.repeats} (load "
                  f"average {os.getloadavg()[0]:.1f}): into new sessions {us['fresh']:.1f} us "
                  f"({us['fresh_system']:.1f} of it in the kernel), into resumed sessions "
                  f"{us['resumed']:.1f} us ({us['resumed_system']:.1f})")
            return
        with postgres(args.postgres) as pg_dsn:
            pinned_here(args.pin)
            if args.instructions:
                print_instructions(base_url, pg_dsn, collect=not args.no_gc, warm=args.warm)
                return

            row = asyncio.run(measure(args, base_url, pg_dsn))
    finally:
        model.terminate()
        model.wait(10)
    if args.json:
        print(json.dumps(row))
        return
    print(f"client CPU per turn ({row['turns_per_run']}-turn runs, median of {row['repeats']} "
          f"batches of {row['runs']}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs)")
    print(f"  library, no store   {row['none_ms']:7.3f} ms")
    print(f"  library, SQLite     {row['sqlite_ms']:7.3f} ms  x{row['sqlite_ratio']:.2f} "
          "(target <= 1.3)")
    print(f"  library, PostgreSQL {row['postgres_ms']:7.3f} ms  x{row['postgres_ratio']:.2f} "
          "(target <= 1.6)")
    if "serve_sqlite_ms" in row:
        print(f"  serve, SQLite       {row['serve_sqlite_ms']:7.3f} ms  "
              f"x{row['serve_sqlite_ratio']:.2f} of the library with SQLite (target <= 1.5)")
        print(f"  serve, PostgreSQL   {row['serve_postgres_ms']:7.3f} ms  "
              f"x{row['serve_postgres_ratio']:.2f} of the library with PostgreSQL "
              "(target <= 1.5)")


if __name__ == "__main__":
    main()
