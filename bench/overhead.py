"""Per-turn overhead of loopwright against a minimal hand-written httpx loop.

Both drive the same tool-calling workload (ROUNDS rounds of one tool call, then a final answer)
against the same fake model server, which runs in a separate process so its CPU time does not
count against either side. Streaming and non-streaming, at concurrency 1 and 50, in every API
mode; each setting runs in a fresh process of its own (a user runs one mode per process), in
which the two sides' batches alternate. Prints, per turn, the client CPU (user + system time of
the process / turns completed: robust to other load on the machine) and the wall time, for both
sides, and loopwright's ratio to the hand loop on each. Growth over one long run is
bench/context_growth.py --rounds 300.

    python bench/overhead.py                 # all modes, both stream settings, c=1 and c=50
    python bench/overhead.py --quick         # fewer repetitions
    python bench/overhead.py --mode chat_completions
    python bench/overhead.py --concurrency 1 --repeats 60 --sync-tool
    python bench/overhead.py --concurrency 1 --sync-tool --threaded-floor
    python bench/overhead.py --one-process   # every setting one after another in one process
    python bench/overhead.py --pin           # the measured side on CPU 0, the server on CPU 1

In one process, a setting measured after others reads up to 0.03 higher in the ratio than in a
fresh process (responses plain), with the same instruction count (callgrind): the machine's
caches, not more work (docs/benchmarks.md, issue 31, ninth session).

Target (issue 31): loopwright's client CPU <= 1.3x the hand loop's per turn in every setting
(c=1 and c=50, plain and streamed, `async def` and `def` tools), on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hand_loops
from hand_loops import HAND_LOOPS
from server_process import start_ready

from loopwright import Agent, Tool, tool
from loopwright.endpoints.base import close_shared_client

ROUNDS = 20


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


# The hand loop calls its tool inline, blocking its event loop while the tool runs; loopwright
# runs a *sync* tool in a worker thread so it cannot, which costs a thread hop per call (about
# 0.5 ms here). The workload's tool is therefore written as an async tool on both sides' terms:
# no blocking, no thread. `--sync-tool` measures loopwright with the sync variant instead.
@tool(name="lookup", read_only=True)
def lookup_sync(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def start_server(rounds: int = ROUNDS) -> tuple[subprocess.Popen[str], str]:
    return start_ready(
        [sys.executable, str(Path(__file__).with_name("bench_server.py")), str(rounds)])


async def loopwright_run(agent: Agent, prompt: str) -> int:
    result = await agent.run(prompt)
    if result.stop_reason != "completed" or result.turns != ROUNDS + 1:
        raise RuntimeError(f"unexpected result: {result.stop_reason} after {result.turns}")
    return result.turns


async def measure(side: str, mode: str, stream: bool, concurrency: int, base_url: str,
                  client: httpx.AsyncClient, agent: Agent) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per turn for one batch of `concurrency` simultaneous runs."""
    cpu, started = time.process_time(), time.perf_counter()
    if side == "loopwright":
        coros = [loopwright_run(agent, f"task {n}") for n in range(concurrency)]
    else:
        hand = HAND_LOOPS[mode]
        coros = [hand(client, base_url, f"task {n}", stream=stream, rounds=ROUNDS)
                 for n in range(concurrency)]
    turns = sum(await asyncio.gather(*coros))
    return (time.process_time() - cpu) / turns, (time.perf_counter() - started) / turns


async def bench_setting(mode: str, stream: bool, concurrency: int, base_url: str,
                        repeats: int, tool: Tool = lookup) -> dict[str, Any]:
    client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=500,
                                                               max_keepalive_connections=200))
    agent = Agent("bench-model", base_url=base_url, api_key="k", api_mode=mode, tools=[tool],
                  stream=stream, max_turns=ROUNDS + 5)
    samples: dict[str, list[tuple[float, float]]] = {"hand": [], "loopwright": []}
    try:
        for side in ("hand", "loopwright"):  # warm-up: connections, imports, caches
            await measure(side, mode, stream, concurrency, base_url, client, agent)
        for _ in range(repeats):
            for side in ("hand", "loopwright"):
                samples[side].append(
                    await measure(side, mode, stream, concurrency, base_url, client, agent))
    finally:
        await client.aclose()
        await close_shared_client()
    row: dict[str, Any] = {"mode": mode, "stream": stream, "concurrency": concurrency}
    for n, measure_name in enumerate(("cpu", "wall")):
        hand = statistics.median(s[n] for s in samples["hand"]) * 1000
        lw = statistics.median(s[n] for s in samples["loopwright"]) * 1000
        row[f"hand_{measure_name}_ms"] = round(hand, 3)
        row[f"loopwright_{measure_name}_ms"] = round(lw, 3)
        row[f"{measure_name}_ratio"] = round(lw / hand, 2)
    row["load"] = round(os.getloadavg()[0], 2)  # CPU per turn is inflated under load
    return row


def _setting_in_own_process(mode: str, stream: bool, concurrency: int, repeats: int,
                            base_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """One setting measured by a fresh interpreter (this script with `--child`): its row."""
    command = [sys.executable, __file__, "--child", "--base-url", base_url, "--mode", mode,
               "--concurrency", str(concurrency), "--repeats", str(repeats)]
    command += ["--stream"] if stream else []
    command += ["--sync-tool"] if args.sync_tool else []
    command += ["--threaded-floor"] if args.threaded_floor else []
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def _child(args: argparse.Namespace) -> None:
    """`--child`: measure the one setting named and print its row as JSON."""
    hand_loops.TOOL_IN_THREAD = args.threaded_floor
    row = asyncio.run(bench_setting(args.mode[0], args.stream, args.concurrency[0], args.base_url,
                                    args.repeats, lookup_sync if args.sync_tool else lookup))
    print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append",
                        choices=["chat_completions", "responses", "anthropic_messages"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true", help="print results as JSON lines")
    parser.add_argument("--sync-tool", action="store_true",
                        help="give loopwright a sync tool (run in a worker thread)")
    parser.add_argument("--threaded-floor", action="store_true",
                        help="the hand loop runs its tool on a worker thread (asyncio.to_thread), "
                             "as a loop that never blocks must run a plain def tool")
    parser.add_argument("--concurrency", action="append", type=int, choices=[1, 50],
                        help="only these concurrencies (default: both)")
    parser.add_argument("--repeats", type=int, default=0,
                        help="interleaved pairs per setting (default: 30 at c=1, 7 at c=50; "
                             "--quick: 10 and 3)")
    parser.add_argument("--one-process", action="store_true",
                        help="measure every setting in this process, one after another (the "
                             "way before the ninth session; later settings read higher)")
    parser.add_argument("--pin", action="store_true",
                        help="the measured processes on CPU 0, the fake model server on CPU 1")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    hand_loops.TOOL_IN_THREAD = args.threaded_floor
    modes = args.mode or ["chat_completions", "responses", "anthropic_messages"]
    if args.pin:  # the server inherits CPU 1; this process and its children then take CPU 0
        os.sched_setaffinity(0, {1})
    proc, base_url = start_server()
    if args.pin:
        os.sched_setaffinity(0, {0})
    rows = []
    print("ms per turn: client CPU, wall in brackets; ratio = loopwright / hand loop")
    print("| API mode | stream | concurrency | hand loop CPU (wall) | loopwright CPU (wall) "
          "| ratio CPU (wall) | load |")
    print("|---|---|---|---|---|---|---|")
    try:
        for mode in modes:
            for stream in (False, True):
                for concurrency in args.concurrency or (1, 50):
                    repeats = args.repeats or ((3 if args.quick else 7) if concurrency == 50
                                               else (10 if args.quick else 30))
                    if args.one_process:
                        row = asyncio.run(bench_setting(
                            mode, stream, concurrency, base_url, repeats,
                            lookup_sync if args.sync_tool else lookup))
                    else:
                        row = _setting_in_own_process(mode, stream, concurrency, repeats,
                                                      base_url, args)
                    rows.append(row)
                    if args.json:
                        print(json.dumps(row), flush=True)
                        continue
                    print(f"| {mode} | {'yes' if stream else 'no'} | {concurrency} "
                          f"| {row['hand_cpu_ms']:.3f} ({row['hand_wall_ms']:.3f}) "
                          f"| {row['loopwright_cpu_ms']:.3f} ({row['loopwright_wall_ms']:.3f}) "
                          f"| {row['cpu_ratio']:.2f} ({row['wall_ratio']:.2f}) | {row['load']} |",
                          flush=True)
    finally:
        proc.kill()
    print(f"worst CPU ratio: {max(r['cpu_ratio'] for r in rows):.2f}, worst wall ratio: "
          f"{max(r['wall_ratio'] for r in rows):.2f} (target: CPU <= 1.3)")


if __name__ == "__main__":
    main()
