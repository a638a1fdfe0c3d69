"""How loopwright's per-turn cost grows with the history (compaction off).

    python bench/context_growth.py [--sizes 10,1000,10000] [--turns 3] [--repeats 5]
    python bench/context_growth.py --rounds 300 [--mode chat_completions] [--no-stream]

`--rounds N` instead runs one N-round tool loop per API mode (loopwright, then the bare httpx
loop of bench/hand_loops.py, same server) and prints the client CPU and wall time per turn over
rounds 1-20 and over the last 20: flat means no per-message work is repeated each turn (target:
loopwright's CPU per turn within 1.2x). CPU is this process's user + system time, so it does not
count the server and is robust to other load on the machine; wall time is not.

For each history size it starts runs whose history already holds that many messages (tool-call
/ tool-result pairs with ~200-character results), against the fake model server in its own
process (so its JSON parsing does not share our interpreter), and reports per turn:

- the request size on the wire,
- the median wall time of a turn (our side plus the local HTTP round trip and the server's parse),
- the time per KB of request — flat or falling means growth is no worse than linear,
- the peak memory a turn allocates (tracemalloc, measured in a separate pass).

Every turn re-sends the whole history, so the request size is the floor of the cost; what the
loop adds on top (sanitising, token estimates, wire conversion) is memoised per message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hand_loops import HAND_LOOPS
from overhead import lookup
from server_process import start_ready

from loopwright import Agent, tool
from loopwright.endpoints.base import close_shared_client
from loopwright.messages import Message, ToolCall, assistant, tool_result, user


@tool(read_only=True)
def noop(n: int) -> str:
    """Do nothing."""
    return f"done {n}"


def make_history(size: int) -> list[Message]:
    history = [user("Start the long task.")]
    n = 0
    while len(history) < size:
        call = ToolCall(id=f"call_{n}", name="noop", arguments=json.dumps({"n": n}))
        history.append(assistant(f"Step {n}.", [call]))
        history.append(tool_result(call, f"result {n}: " + "r" * 190))
        n += 1
    return history[:size]


def start_server(turns: int, directory: Path) -> tuple[subprocess.Popen[str], str]:
    script = [{"tool_calls": [{"name": "noop", "arguments": {"n": -k}}]} for k in range(turns - 1)]
    script.append({"text": "finished"})
    path = directory / "script.json"
    path.write_text(json.dumps(script))
    return start_ready(
        [sys.executable, "-m", "loopwright.testing.server", "--script", str(path), "--repeat"])


def request_kb(agent: Agent, history: list[Message]) -> float:
    from loopwright.messages import ModelRequest
    from loopwright.wire import get_wire_format

    wire = get_wire_format("chat_completions")
    messages = [Message(role="system", content=agent._system_prompt(Path.cwd())), *history]
    body = wire.build_body(ModelRequest(model="m", messages=messages), stream=True)
    return len(json.dumps(body).encode()) / 1024


async def per_turn_seconds(agent: Agent, history: list[Message], turns: int,
                           repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = await agent.run("Continue.", history=list(history))
        elapsed = time.perf_counter() - started
        assert result.stop_reason == "completed" and result.turns == turns, result.error
        samples.append(elapsed / turns)
    return statistics.median(samples)


async def per_turn_peak_bytes(agent: Agent, history: list[Message], turns: int) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    await agent.run("Continue.", history=list(history))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - before) // 1


async def measure(base_url: str, sizes: list[int], turns: int, repeats: int,
                  workdir: Path) -> list[dict[str, float]]:
    agent = Agent("m", base_url=base_url, api_key="k", tools=[noop], compaction=False,
                  context_window=10_000_000, workdir=str(workdir), cache_dir=str(workdir))
    rows = []
    await agent.run("warm up", history=make_history(10))  # connections, imports, caches
    for size in sizes:
        history = make_history(size)
        seconds = await per_turn_seconds(agent, history, turns, repeats)
        peak = await per_turn_peak_bytes(agent, history, turns)
        kb = request_kb(agent, history)
        rows.append({"messages": size, "request_kb": kb, "ms_per_turn": seconds * 1000,
                     "us_per_kb": seconds * 1e6 / kb, "peak_mb": peak / 2**20})
    await close_shared_client()
    return rows


async def one_long_run(side: str, mode: str, base_url: str, rounds: int, stream: bool,
                       workdir: Path) -> list[tuple[float, float]]:
    """(process CPU, wall) at the start of every turn of one `rounds`-round run."""
    stamps: list[tuple[float, float]] = []

    def stamp() -> None:
        stamps.append((time.process_time(), time.perf_counter()))

    if side == "hand":
        async with httpx.AsyncClient(timeout=60) as client:
            await HAND_LOOPS[mode](client, base_url, "long task", stream=stream, rounds=rounds,
                                   on_turn=stamp)
        return stamps
    agent = Agent("bench-model", base_url=base_url, api_key="k", api_mode=mode, tools=[lookup],
                  stream=stream, max_turns=rounds + 5, iteration_budget=rounds + 5,
                  context_window=10_000_000,
                  workdir=str(workdir), cache_dir=str(workdir),
                  callbacks=[lambda e: stamp() if e.type == "turn_start" else None])
    result = await agent.run("long task")
    await close_shared_client()
    assert result.stop_reason == "completed" and result.turns == rounds + 1, result.error
    return stamps


def per_turn_ms(stamps: list[tuple[float, float]], first: int, last: int) -> tuple[float, float]:
    """(CPU, wall) ms per turn from the start of turn `first` to the start of turn `last`."""
    (cpu0, wall0), (cpu1, wall1) = stamps[first], stamps[last]
    return 1000 * (cpu1 - cpu0) / (last - first), 1000 * (wall1 - wall0) / (last - first)


def long_runs(modes: list[str], rounds: int, stream: bool, repeats: int) -> None:
    print(f"one {rounds}-round run per side and mode, stream={stream}; ms per turn over rounds "
          f"1-20 -> {rounds - 19}-{rounds}, client CPU (wall); best of {repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        process, base_url = start_ready(
            [sys.executable, str(Path(__file__).with_name("bench_server.py")), str(rounds)])
        try:
            for mode in modes:
                cells = []
                for side in ("loopwright", "hand"):
                    early: list[tuple[float, float]] = []
                    late: list[tuple[float, float]] = []
                    for n in range(repeats + 1):  # the first run warms up
                        stamps = asyncio.run(one_long_run(side, mode, base_url, rounds, stream,
                                                          Path(tmp)))
                        if n == 0:
                            continue
                        early.append(per_turn_ms(stamps, 0, 20))
                        late.append(per_turn_ms(stamps, rounds - 20, rounds))
                    (c0, w0), (c1, w1) = min(early), min(late)
                    cells.append(f"{side} {c0:.2f} ({w0:.2f}) -> {c1:.2f} ({w1:.2f}) "
                                 f"= {c1 / c0:.2f}x CPU")
                print(f"{mode:19} " + "   ".join(cells), flush=True)
        finally:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, help="one long run of this many tool rounds")
    parser.add_argument("--mode", action="append",
                        choices=["chat_completions", "responses", "anthropic_messages"])
    parser.add_argument("--no-stream", action="store_true")
    args = parser.parse_args()
    if args.rounds:
        long_runs(args.mode or ["chat_completions", "responses", "anthropic_messages"],
                  args.rounds, not args.no_stream, min(args.repeats, 3))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        process, base_url = start_server(args.turns, Path(tmp))
        try:
            rows = asyncio.run(measure(base_url, sizes, args.turns, args.repeats, Path(tmp)))
        finally:
            process.terminate()
            process.wait(10)
    print(f"{'history':>8} {'request':>10} {'per turn':>10} {'per KB':>9} {'peak mem':>9}")
    for row in rows:
        print(f"{row['messages']:>8,} {row['request_kb']:>8.0f}KB {row['ms_per_turn']:>8.2f}ms "
              f"{row['us_per_kb']:>7.1f}µs {row['peak_mb']:>7.2f}MB")
    first, last = rows[0], rows[-1]
    time_ratio = last["ms_per_turn"] / first["ms_per_turn"]
    growth = time_ratio / (last["request_kb"] / first["request_kb"])
    print(f"time grew {last['ms_per_turn'] / first['ms_per_turn']:.1f}x for "
          f"{last['request_kb'] / first['request_kb']:.0f}x the request: "
          f"{'linear or better' if growth <= 1.2 else 'WORSE than linear'} ({growth:.2f})")


if __name__ == "__main__":
    main()
