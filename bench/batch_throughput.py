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
    taskset -c 0 python bench/batch_throughput.py --tasks 2000 --local 16 --ray-workers '' \
        --repeats 3 --threads          # 3 alternating pairs; each thread's CPU and switches
    python bench/batch_throughput.py --tasks 300 --local 16 --ray-workers '' --callgrind

Each local setting is followed by the same tasks run through the library (one `Agent`,
`run()` at the same concurrency) and the ratio of the batch's CPU per run to it. Both sides
first run WARMUP tasks the same way in the same process, not timed: the imports and first-use
work of the runtime (a few hundred ms of CPU, loaded by the first agent made or run) are not a
cost per run, and were counted on the batch's side only; then both collect their garbage.
`--callgrind` (needs valgrind and gcc, as bench/instructions.py) counts the instructions of the
timed tasks only; its figures move with the run's timing against the server too.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_process import start_ready
from thread_stats import thread_cpu

from loopwright.batch import run_batch

TICKS = os.sysconf("SC_CLK_TCK")


class TreeCpu:
    """CPU seconds of this process's descendants, sampled from /proc (a process that ends
    keeps its last sample). Not `enabled` (a local setting, which starts no process): no
    polling thread, whose CPU the library's side would not have."""

    def __init__(self, interval: float = 0.2, *, enabled: bool = True) -> None:
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(interval,), daemon=True)
        self._enabled = enabled

    def __enter__(self) -> TreeCpu:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
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


def thread_counters() -> dict[str, tuple[float, int, int]]:
    """CPU seconds and (voluntary, involuntary) context switches of each live thread of this
    process by name/tid, and under "process" the whole process's (ended threads included)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {"process": (usage.ru_utime + usage.ru_stime, usage.ru_nvcsw, usage.ru_nivcsw)}
    for tid, counts in thread_cpu().items():
        out[f"{names.get(tid, 'thread')}/{tid}"] = counts
    return out


def thread_delta(before: dict[str, tuple[float, int, int]], tasks: int
                 ) -> dict[str, list[float]]:
    """Per thread that ran: CPU ms and voluntary / involuntary switches a task since `before`;
    "ended" is what threads gone by now took (the process's CPU less the live threads')."""
    after = thread_counters()
    zero = (0.0, 0, 0)
    out = {}
    for key, now in after.items():
        then = before.get(key, zero)
        delta = [round((now[0] - then[0]) / tasks * 1000, 3),
                 round((now[1] - then[1]) / tasks, 2), round((now[2] - then[2]) / tasks, 2)]
        if any(delta):
            out[key] = delta
    live = sum(cpu for key, (cpu, *_) in out.items() if key != "process")
    out["ended"] = [round(out["process"][0] - live, 3)]
    return out


class GcClock:
    """Collections per generation and the time they took (`gc.callbacks`), from `start()`."""

    def __init__(self) -> None:
        self.counts = [0, 0, 0]
        self.seconds = 0.0
        self._began = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.counts[info["generation"]] += 1
            self.seconds += time.perf_counter() - self._began

    def start(self) -> None:
        self.counts, self.seconds = [0, 0, 0], 0.0

    def report(self, tasks: int) -> dict[str, Any]:
        return {"collections": self.counts, "gc_ms_per_run": round(self.seconds / tasks * 1000, 4)}


def counting(args: argparse.Namespace, on: bool) -> None:
    """Under callgrind (`--callgrind`): instructions are counted between the two calls only,
    and dumped at the second."""
    if args.toggle:
        import ctypes

        helper = ctypes.CDLL(args.toggle)
        helper.toggle()
        if not on:
            helper.dump()


async def one_setting(args: argparse.Namespace) -> dict[str, Any]:
    tasks = [{"id": n, "prompt": f"task {n}", "expected": "ok"}
             for n in range(max(args.tasks, args.warmup))]
    ray_address = None
    if args.workers:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024**2,
                 log_to_driver=False)
        ray_address = "auto"
    with tempfile.TemporaryDirectory() as out, TreeCpu(enabled=bool(args.workers)) as tree:
        if args.warmup and not args.workers:
            await run_batch(tasks[:args.warmup], Path(out) / "warmup",
                            concurrency=args.concurrency, model="bench",
                            base_url=args.base_url, api_key="k", context_window=32_000)
        gc.collect()  # both sides start their clock with the warm-up's garbage collected
        threads, cpu, wall = thread_counters(), own_cpu(), time.perf_counter()
        args.gc.start()
        counting(args, True)
        report = await run_batch(tasks[:args.tasks], Path(out) / "timed",
                                 concurrency=args.concurrency, ray=ray_address,
                                 ray_workers=args.workers or None, model="bench",
                                 base_url=args.base_url, api_key="k", context_window=32_000)
        counting(args, False)
        wall, cpu = time.perf_counter() - wall, own_cpu() - cpu
        per_thread = thread_delta(threads, args.tasks)
        per_thread["gc"] = args.gc.report(args.tasks)
        tree_before = tree.total()
    return {"where": "ray" if args.workers else "local", "workers": args.workers or 1,
            "concurrency": args.concurrency, "tasks": args.tasks,
            "solved": report.summary.solved, "wall": wall, "runs_per_s": args.tasks / wall,
            "driver_cpu_ms": cpu / args.tasks * 1000,
            "others_cpu_ms": tree_before / args.tasks * 1000, "threads": per_thread}


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
        gc.collect()  # both sides start their clock with the warm-up's garbage collected
        threads, cpu, wall = thread_counters(), own_cpu(), time.perf_counter()
        args.gc.start()
        counting(args, True)
        solved = sum(await asyncio.gather(*(one(n) for n in range(args.tasks))))
        counting(args, False)
        wall, cpu = time.perf_counter() - wall, own_cpu() - cpu
        per_thread = thread_delta(threads, args.tasks)
        per_thread["gc"] = args.gc.report(args.tasks)
    return {"where": "library", "workers": 1, "concurrency": args.concurrency,
            "tasks": args.tasks, "solved": solved, "wall": wall,
            "runs_per_s": args.tasks / wall, "driver_cpu_ms": cpu / args.tasks * 1000,
            "others_cpu_ms": 0.0, "threads": per_thread}


def child(args: argparse.Namespace) -> None:
    args.gc = GcClock()
    setting = library_setting(args) if args.library else one_setting(args)
    print(json.dumps(asyncio.run(setting)), flush=True)


def run_child(base_url: str, tasks: int, concurrency: int, workers: int, warmup: int,
              library: bool = False, toggle: Path | None = None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "--base-url", base_url, "--tasks",
               str(tasks), "--concurrency", str(concurrency), "--workers", str(workers),
               "--warmup", str(warmup),
               *(["--library"] if library else [])]
    if toggle is None:
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
    from instructions import _dumped_total

    with tempfile.TemporaryDirectory() as scratch:
        out_file = Path(scratch) / "callgrind.out"
        done = subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                               f"--callgrind-out-file={out_file}", *command,
                               "--toggle", str(toggle)],
                              capture_output=True, text=True, check=True)
        row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        row["instructions"] = _dumped_total(Path(f"{out_file}.1")) / tasks
    return row


def measure_setting(args: argparse.Namespace, base_url: str, concurrency: int, workers: int,
                    toggle: Path | None) -> None:
    """One setting's rows; a local one `--repeats` times, the batch's and the library's
    children alternating, each pair's ratio and at the end their median."""
    ratios: list[float] = []
    sides: dict[str, list[float]] = {"local": [], "library": []}
    for _ in range(1 if workers else args.repeats):
        rows = [run_child(base_url, args.tasks, concurrency, workers, args.warmup,
                          toggle=None if workers else toggle)]
        if not workers:  # the same tasks through the library, for the ratio
            rows.append(run_child(base_url, args.tasks, concurrency, 0, args.warmup,
                                  library=True, toggle=toggle))
        for row in rows:
            others = f"{row['others_cpu_ms']:.2f} ms" if workers else "—"
            print(f"| {row['where']} | {row['workers']} | {row['concurrency']} | "
                  f"{row['tasks']:,} | {row['solved']:,} | {row['wall']:.1f} s | "
                  f"{row['runs_per_s']:.0f} | {row['driver_cpu_ms']:.2f} ms | {others} |",
                  flush=True)
            if args.threads:
                print(f"  {row['where']} threads (CPU ms, switches a task): "
                      f"{row['threads']}", flush=True)
        if workers:
            return
        for row in rows:
            sides[row["where"]].append(row["driver_cpu_ms"])
        ratios.append(rows[0]["driver_cpu_ms"] / rows[1]["driver_cpu_ms"])
        print(f"|  |  |  |  |  |  | batch / library CPU per run | {ratios[-1]:.2f} |  |",
              flush=True)
        if toggle is not None:
            batch, library = rows[0]["instructions"], rows[1]["instructions"]
            print(f"|  |  |  |  |  |  | instructions per run, batch / library | "
                  f"{batch / 1e6:.3f} M / {library / 1e6:.3f} M = "
                  f"{batch / library:.3f} |  |", flush=True)
    if len(ratios) > 1:
        print(f"concurrency {concurrency}, {len(ratios)} pairs: batch / library median "
              f"{statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f}); "
              f"batch {min(sides['local']):.2f}-{max(sides['local']):.2f} ms, library "
              f"{min(sides['library']):.2f}-{max(sides['library']):.2f} ms a run; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)


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
    parser.add_argument("--threads", action="store_true",
                        help="print each thread's CPU and context switches a task")
    parser.add_argument("--repeats", type=int, default=1,
                        help="pairs of children per local setting (batch, library, batch, ...)")
    parser.add_argument("--callgrind", action="store_true",
                        help="run each local setting under callgrind and print instructions "
                             "a run of both sides (slow: use a few hundred tasks)")
    parser.add_argument("--toggle", help=argparse.SUPPRESS)
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
        toggle = None
        if args.callgrind:
            from instructions import build_toggle

            toggle = build_toggle(Path(scratch))
        script = Path(scratch) / "script.json"
        script.write_text(json.dumps([{"text": "ok"}]))
        server, base_url = start_ready([sys.executable, "-m", "loopwright.testing.server",
                                        "--script", str(script), "--repeat"])
        try:
            print("| where | workers | concurrency | tasks | solved | wall | runs/s "
                  "| driver CPU/run | Ray processes CPU/run |")
            print("|---|---|---|---|---|---|---|---|---|")
            for concurrency, workers in settings:
                measure_setting(args, base_url, concurrency, workers, toggle)
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
