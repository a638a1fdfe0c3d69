"""Instructions per turn (callgrind) of loopwright against the bare httpx loop (hand_loops.py),
in every API mode, plain and streamed, at concurrency 1 and 50, with an `async def` and with a
plain `def` tool. Instruction counts do not move with the machine's load, unlike CPU time.

Each setting runs in its own child process under `valgrind --tool=callgrind
--collect-atstart=no`; the child warms up (imports, connections, caches), then switches
collection on for the measured runs only, through callgrind's client request
(`CALLGRIND_TOGGLE_COLLECT`, a tiny C helper compiled at start: needs gcc and valgrind's
headers), and dumps the count after each measured batch (`CALLGRIND_DUMP_STATS`): a setting's
figure is the median of its batches' instructions per turn, so one batch disturbed by the
machine (a pool left larger by a slow moment) does not make it. The fake model server runs in a
process of its own, not under valgrind.

    python bench/instructions.py                       # every setting (slow: ~1 min each)
    python bench/instructions.py --mode chat_completions --concurrency 1
    python bench/instructions.py --tool def --stream no
    python bench/instructions.py --concurrency 50 --rounds 5 --repeats 3   # c=50, median of 3

Target (issue 31): loopwright <= 1.2x the bare loop's instructions per turn in every setting.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = ("chat_completions", "responses", "anthropic_messages")
ROUNDS = 20  # bench_server.py answers with ROUNDS tool calls, then the answer
_TOGGLE_C = """
#include <valgrind/callgrind.h>
void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void dump(void) { CALLGRIND_DUMP_STATS; }
"""


def build_toggle(directory: Path) -> Path:
    source, library = directory / "toggle.c", directory / "libtoggle.so"
    source.write_text(_TOGGLE_C, encoding="utf-8")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)],
                   check=True)
    return library


# -- the child: one setting, under callgrind ----------------------------------------------------

async def child(args: argparse.Namespace) -> None:
    import httpx
    from hand_loops import HAND_LOOPS
    from overhead import lookup, lookup_sync  # the workload's tool, as bench/overhead.py's

    from loopwright import Agent
    from loopwright.endpoints.base import close_shared_client

    helper = ctypes.CDLL(args.toggle)
    stream = args.stream == "yes"
    client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=500,
                                                               max_keepalive_connections=500))
    agent = Agent("bench-model", base_url=args.base_url, api_key="k", api_mode=args.mode,
                  tools=[lookup if args.tool == "async" else lookup_sync], stream=stream,
                  max_turns=args.rounds + 5, skills=False)

    async def batch() -> int:
        if args.side == "loopwright":
            results = await asyncio.gather(*(agent.run(f"task {n}")
                                             for n in range(args.concurrency)))
            if any(r.stop_reason != "completed" for r in results):
                raise RuntimeError(f"a run failed: {[r.stop_reason for r in results]}")
            return sum(r.turns for r in results)
        hand = HAND_LOOPS[args.mode]
        return sum(await asyncio.gather(*(hand(client, args.base_url, f"task {n}",
                                               stream=stream, rounds=args.rounds)
                                          for n in range(args.concurrency))))

    await batch()  # warm-up, not counted
    for _ in range(args.repeats):
        helper.toggle()
        turns = await batch()
        helper.toggle()
        helper.dump()  # this batch's count, in a file of its own
        print(f"TURNS {turns}", flush=True)
    await client.aclose()
    await close_shared_client()


# -- the parent: every setting ------------------------------------------------------------------

def measure(setting: dict[str, str], base_url: str, toggle: Path, repeats: int,
            rounds: int) -> list[float]:
    """Instructions per turn of one setting's measured batches, least first."""
    with tempfile.TemporaryDirectory() as scratch:
        out_file = Path(scratch) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                   f"--callgrind-out-file={out_file}", sys.executable, __file__, "--child",
                   "--base-url", base_url, "--toggle", str(toggle), "--repeats", str(repeats),
                   "--rounds", str(rounds), *[f"--{key}={value}" for key, value in setting.items()]]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        turns = [int(n) for n in re.findall(r"TURNS (\d+)", out.stdout)]
        # one file per dump, numbered in the order of the batches (the last, at exit, is empty)
        counts = [_dumped_total(Path(f"{out_file}.{n + 1}")) for n in range(len(turns))]
    return sorted(count / turn for count, turn in zip(counts, turns, strict=True))


def _median(values: list[float]) -> float:
    return values[len(values) // 2]


def _shown(values: list[float]) -> str:
    """The median, and the batches' range when there are several."""
    if len(values) == 1:
        return f"{values[0] / 1e6:.2f} M"
    return f"{_median(values) / 1e6:.2f} M ({values[0] / 1e6:.2f}-{values[-1] / 1e6:.2f})"


def _dumped_total(path: Path) -> int:
    match = re.search(r"^(?:summary|totals): (\d+)", path.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no total in {path}")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", default="loopwright", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--toggle", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=0,
                        help="measured batches per setting, each counted apart: the figure is "
                             "their median (default 3 at c=1, 1 at c=50)")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"tool rounds per run before the answer (default {ROUNDS})")
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument("--stream", action="append", choices=["no", "yes"])
    parser.add_argument("--concurrency", action="append", type=int, choices=[1, 50])
    parser.add_argument("--tool", action="append", choices=["async", "def"])
    args = parser.parse_args()
    if args.child:
        args.mode, args.stream = args.mode[0], args.stream[0]
        args.concurrency, args.tool = args.concurrency[0], args.tool[0]
        asyncio.run(child(args))
        return
    from server_process import start_ready

    proc, base_url = start_ready([sys.executable, str(Path(__file__).with_name("bench_server.py")),
                                  str(args.rounds)])
    print(f"instructions per turn (callgrind), {args.rounds} tool rounds a run, the median of "
          "each side's batches (their range in brackets); ratio = loopwright / bare httpx loop")
    print("| API mode | stream | concurrency | tool | bare loop | loopwright | ratio |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    try:
        with tempfile.TemporaryDirectory() as scratch:
            toggle = build_toggle(Path(scratch))
            for mode in args.mode or MODES:
                for stream in args.stream or ["no", "yes"]:
                    for concurrency in args.concurrency or [1, 50]:
                        repeats = args.repeats or (3 if concurrency == 1 else 1)
                        base = {"mode": mode, "stream": stream, "concurrency": str(concurrency),
                                "tool": "async"}
                        bare = measure({**base, "side": "hand"}, base_url, toggle, repeats,
                                       args.rounds)
                        for kind in args.tool or ["async", "def"]:
                            ours = measure({**base, "tool": kind, "side": "loopwright"},
                                           base_url, toggle, repeats, args.rounds)
                            ratio = _median(ours) / _median(bare)
                            worst = max(worst, ratio)
                            print(f"| {mode} | {stream} | {concurrency} | {kind} "
                                  f"| {_shown(bare)} | {_shown(ours)} | {ratio:.2f} |",
                                  flush=True)
    finally:
        proc.kill()
    print(f"worst ratio: {worst:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
