"""`loopwright batch` throughput: runs per second and CPU per run for many short tasks, locally
at several concurrencies and on a local Ray cluster with 1 and 2 workers.

Each task is one model turn (the fake model server answers "ok" at once) checked with `exact`;
no tools, no session store. The fake server runs in a separate process (its CPU is not counted).
Each setting runs in a fresh child process. CPU is user + system time: of the driver process,
and — on Ray — of every process the driver started (GCS, raylet, the BatchWorker actors), read
from /proc while the batch runs. Ray's start-up (`ray.init`) is not timed; starting the actors
is, as part of the batch.

    python bench/batch_throughput.py                        # 2,000 tasks, the default settings
    python bench/batch_throughput.py --tasks 500 --local 16,64 --ray-workers 1

Each local setting is followed by the same tasks run through the library (one `Agent`,
`run()` at the same concurrency) and the ratio of the batch's CPU per run to it. Both sides
first run WARMUP tasks the same way in the same process, not timed: the imports and first-use
work of the runtime (a few hundred ms of CPU, loaded by the first agent made or run) are not a
cost per run, and were counted on the batch's side only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_process import start_ready

from loopwright.batch import run_batch

TICKS = os.sysconf("SC_CLK_TCK")


class TreeCpu:
    """CPU seconds of this process's descendants, sampled from /proc (a process that ends
    keeps its last sample)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(interval,), daemon=True)

    def __enter__(self) -> TreeCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def total(self) -> float:
        return sum(self.seen.values())

    def _poll(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self._sample()

    def _sample(self) -> None:
        parents: dict[int, int] = {}
        cpu: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / TICKS
        mine = {os.getpid()}
        grew = True
        while grew:
            found = {pid for pid, parent in parents.items() if parent in mine} - mine
            grew = bool(found)
            mine |= found
        for pid in mine - {os.getpid()}:
            self.seen[pid] = max(self.seen.get(pid, 0.0), cpu.get(pid, 0.0))


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_setting(args: argparse.Namespace) -> dict[str, Any]:
    tasks = [{"id": n, "prompt": f"task {n}", "expected": "ok"}
             for n in range(max(args.tasks, args.warmup))]
    ray_address = None
    if args.workers:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024**2,
                 log_to_driver=False)
        ray_address = "auto"
    with tempfile.TemporaryDirectory() as out, TreeCpu() as tree:
        if args.warmup and not args.workers:
            await run_batch(tasks[:args.warmup], Path(out) / "warmup",
                            concurrency=args.concurrency, model="bench",
                            base_url=args.base_url, api_key="k", context_window=32_000)
        cpu, wall = own_cpu(), time.perf_counter()
        report = await run_batch(tasks[:args.tasks], Path(out) / "timed",
                                 concurrency=args.concurrency, ray=ray_address,
                                 ray_workers=args.workers or None, model="bench",
                                 base_url=args.base_url, api_key="k", context_window=32_000)
        wall, cpu = time.perf_counter() - wall, own_cpu() - cpu
        tree_before = tree.total()
    return {"where": "ray" if args.workers else "local", "workers": args.workers or 1,
            "concurrency": args.concurrency, "tasks": args.tasks,
            "solved": report.summary.solved, "wall": wall, "runs_per_s": args.tasks / wall,
            "driver_cpu_ms": cpu / args.tasks * 1000,
            "others_cpu_ms": tree_before / args.tasks * 1000}


async def library_setting(args: argparse.Namespace) -> dict[str, Any]:
    """The same tasks through the library: one `Agent`, `run()` at the same concurrency — what
    the batch's CPU per run is compared with (issue 31: <= 1.2x)."""
    from loopwright import Agent

    gate = asyncio.Semaphore(args.concurrency)
    async with Agent("bench", base_url=args.base_url, api_key="k",
                     context_window=32_000) as agent:
        async def one(n: int) -> bool:
            async with gate:
                result = await agent.run(f"task {n}")
            return result.output == "ok"

        await asyncio.gather(*(one(n) for n in range(args.warmup)))
        cpu, wall = own_cpu(), time.perf_counter()
        solved = sum(await asyncio.gather(*(one(n) for n in range(args.tasks))))
        wall, cpu = time.perf_counter() - wall, own_cpu() - cpu
    return {"where": "library", "workers": 1, "concurrency": args.concurrency,
            "tasks": args.tasks, "solved": solved, "wall": wall,
            "runs_per_s": args.tasks / wall, "driver_cpu_ms": cpu / args.tasks * 1000,
            "others_cpu_ms": 0.0}


def child(args: argparse.Namespace) -> None:
    setting = library_setting(args) if args.library else one_setting(args)
    print(json.dumps(asyncio.run(setting)), flush=True)


def run_child(base_url: str, tasks: int, concurrency: int, workers: int, warmup: int,
              library: bool = False) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "--base-url", base_url, "--tasks",
               str(tasks), "--concurrency", str(concurrency), "--workers", str(workers),
               "--warmup", str(warmup),
               *(["--library"] if library else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--local", default="16,64,256,1024",
                        help="local concurrencies to measure (comma-separated)")
    parser.add_argument("--ray-workers", default="1,2",
                        help="Ray worker counts to measure ('' for none)")
    parser.add_argument("--ray-concurrency", type=int, default=256,
                        help="concurrency per Ray worker")
    parser.add_argument("--warmup", type=int, default=50,
                        help="tasks run first on each side, not timed (local settings)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--library", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    settings = [(int(c), 0) for c in args.local.split(",") if c]
    settings += [(args.ray_concurrency, int(w)) for w in args.ray_workers.split(",") if w]
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "script.json"
        script.write_text(json.dumps([{"text": "ok"}]))
        server, base_url = start_ready([sys.executable, "-m", "loopwright.testing.server",
                                        "--script", str(script), "--repeat"])
        try:
            print("| where | workers | concurrency | tasks | solved | wall | runs/s "
                  "| driver CPU/run | Ray processes CPU/run |")
            print("|---|---|---|---|---|---|---|---|---|")
            for concurrency, workers in settings:
                rows = [run_child(base_url, args.tasks, concurrency, workers, args.warmup)]
                if not workers:  # the same tasks through the library, for the ratio
                    rows.append(run_child(base_url, args.tasks, concurrency, 0, args.warmup,
                                          library=True))
                for row in rows:
                    others = f"{row['others_cpu_ms']:.2f} ms" if workers else "—"
                    print(f"| {row['where']} | {row['workers']} | {row['concurrency']} | "
                          f"{row['tasks']:,} | {row['solved']:,} | {row['wall']:.1f} s | "
                          f"{row['runs_per_s']:.0f} | {row['driver_cpu_ms']:.2f} ms | {others} |",
                          flush=True)
                if not workers:
                    ratio = rows[0]["driver_cpu_ms"] / rows[1]["driver_cpu_ms"]
                    print(f"|  |  |  |  |  |  | batch / library CPU per run | {ratio:.2f} |  |",
                          flush=True)
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
