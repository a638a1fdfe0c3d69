"""`loopwright serve` under load: RUNS concurrent runs, each watched by CLIENTS SSE clients, on
loopback. Prints p50 / p99 event latency (from the moment the server appends an event to a run's
log to the moment a client has parsed it) and the server's CPU time per event.

Three processes, so each one's CPU is its own: the fake model server (streamed text replies of
CHARS characters in 8-character deltas, starting DELAY to DELAY + SPREAD seconds after the
request, so every client is connected first and the runs do not all burst at once), the server
(the app `loopwright serve` runs, with its SQLite session store, plus a stamp of when each event
was appended, dumped on SIGUSR1), and this one, which starts the runs and reads the streams.
Latency is end to end on one machine: it includes this process parsing 200 streams.

    python bench/serve_load.py                     # 100 runs, 200 SSE clients
    python bench/serve_load.py --runs 20 --clients 2 --chars 400
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_process import serve_until_stopped, start_ready

TOKEN = "bench-token-0123456789abcdef"
HERE = Path(__file__).resolve()


# --- the child processes ---------------------------------------------------------------------


def model_server(chars: int, delay: float, spread: float) -> None:
    import random

    from loopwright.testing import FakeModelServer, RecordedRequest, Reply

    text = ("lorem ipsum dolor sit amet " * (chars // 27 + 1))[:chars]

    def reply(request: RecordedRequest) -> Reply:  # replies spread over `spread` seconds
        return Reply(text, chunk_size=8, delay=delay + random.uniform(0, spread))

    with FakeModelServer(handler=reply, record_requests=False) as server:
        print(f"READY {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):  # the end of the benchmark
            while True:
                time.sleep(3600)


def serve_child(base_url: str, data_dir: str, stamps_file: str) -> None:
    """The server, as `loopwright serve` builds it, with each appended event's time recorded."""

    from loopwright.serve.app import ServeOptions, create_app
    from loopwright.serve.runs import ServeRun
    from loopwright.store import open_store

    stamps: dict[int, list[float]] = {}
    runs: list[ServeRun] = []
    append = ServeRun.__call__

    def stamped(self: ServeRun, event: Any) -> None:
        append(self, event)
        if id(self) not in stamps:
            stamps[id(self)] = []
            runs.append(self)
        stamps[id(self)].append(time.time())

    ServeRun.__call__ = stamped  # type: ignore[method-assign]

    def dump(*_: Any) -> None:
        partial = Path(stamps_file + ".part")
        partial.write_text(json.dumps({run.id: stamps[id(run)] for run in runs}))
        partial.replace(stamps_file)

    signal.signal(signal.SIGUSR1, dump)
    store = open_store(Path(data_dir) / "sessions.db")
    app = create_app(ServeOptions(token=TOKEN, store=store, agent_options={
        "model": "bench", "base_url": base_url, "api_key": "k", "tools": [],
        "workdir": data_dir}))
    serve_until_stopped(app, backlog=4096)


# --- the load ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def watch(client: Any, run_id: str, received: list[tuple[str, int, float, float]]) -> None:
    """Read one SSE stream to its end; (run, event id, connected at, received at) per event."""
    async with client.stream("GET", f"/runs/{run_id}/events") as response:
        connected = time.time()
        event_id = 0
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                json.loads(line[6:])
                received.append((run_id, event_id, connected, time.time()))


async def load(url: str, runs: int, clients: int, server_pid: int
               ) -> tuple[list[Any], float, float]:
    import httpx

    limits = httpx.Limits(max_connections=runs * clients + 50,
                          max_keepalive_connections=runs * clients + 50)
    received: list[tuple[str, int, float, float]] = []
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300,
                                 headers={"authorization": f"Bearer {TOKEN}"}) as client:
        warm = (await client.post("/runs", json={"prompt": "warm up"})).json()["run_id"]
        await watch(client, warm, [])
        cpu_before, started = cpu_seconds(server_pid), time.perf_counter()

        async def one(n: int) -> None:
            response = await client.post("/runs", json={"prompt": f"task {n}"})
            run_id = response.json()["run_id"]
            await asyncio.gather(*(watch(client, run_id, received) for _ in range(clients)))

        await asyncio.gather(*(one(n) for n in range(runs)))
        return received, time.perf_counter() - started, cpu_seconds(server_pid) - cpu_before


def report(received: list[tuple[str, int, float, float]], stamps: dict[str, list[float]],
           cpu: float, wall: float, runs: int, clients: int) -> None:
    live = [(at - stamps[run][event - 1]) * 1000 for run, event, connected, at in received
            if run in stamps and stamps[run][event - 1] >= connected]
    replayed = len(received) - len(live)
    emitted = sum(len(stamps[run]) for run in {r for r, *_ in received})
    live.sort()
    p50 = statistics.median(live)
    p99 = live[min(len(live) - 1, int(len(live) * 0.99))]
    print(f"runs {runs}, SSE clients {runs * clients}, events emitted {emitted:,}, "
          f"delivered {len(received):,} ({replayed:,} replayed to late clients, not timed)")
    print(f"wall {wall:.1f} s; event latency p50 {p50:.1f} ms, p99 {p99:.1f} ms "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"server CPU {cpu:.2f} s: {cpu / emitted * 1e6:.0f} µs per event emitted, "
          f"{cpu / len(received) * 1e6:.0f} µs per event delivered")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--clients", type=int, default=2, help="SSE clients per run")
    parser.add_argument("--chars", type=int, default=800, help="characters per reply")
    parser.add_argument("--delay", type=float, default=5.0, help="seconds before each reply "
                        "(so every client is connected before the text starts)")
    parser.add_argument("--spread", type=float, default=2.0,
                        help="the replies start spread over this many seconds")
    parser.add_argument("--model-server", nargs=3,
                        help=argparse.SUPPRESS)
    parser.add_argument("--serve-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model_server:
        model_server(int(args.model_server[0]), float(args.model_server[1]),
                     float(args.model_server[2]))
        return
    if args.serve_child:
        serve_child(*args.serve_child)
        return
    with tempfile.TemporaryDirectory() as scratch:
        stamps_file = Path(scratch) / "stamps.json"
        model, base_url = start_ready([sys.executable, str(HERE), "--model-server",
                                       str(args.chars), str(args.delay), str(args.spread)])
        serve, url = start_ready([sys.executable, str(HERE), "--serve-child", base_url, scratch,
                                  str(stamps_file)])
        try:
            client_cpu = time.process_time()
            received, wall, cpu = asyncio.run(load(url, args.runs, args.clients, serve.pid))
            client_cpu = time.process_time() - client_cpu
            serve.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + 30
            while not stamps_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            stamps = json.loads(stamps_file.read_text())
        finally:
            for process in (serve, model):
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
        report(received, stamps, cpu, wall, args.runs, args.clients)
        print(f"client CPU (this process, reading the streams) {client_cpu:.2f} s")


if __name__ == "__main__":
    main()
