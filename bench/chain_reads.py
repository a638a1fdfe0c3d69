"""Issue 28, item 5: a chain of 6 distinct dependent reads on a real small model.

Each file names the next one; only the last holds the value. The run must follow the chain to
the end: a forced answer without tools never cuts a run that is still making new calls. Runs
Qwen2.5-Coder (1.5B by default) on llama.cpp's own server (loopwright.testing.llamacpp; the
weights must be fetched) with the built-in `read_file`, in native and prompt mode, and prints
each run's stop reason, the files read, the answer, and the review events.

    python bench/chain_reads.py            # 1.5B
    python bench/chain_reads.py --model 0.5b
    python bench/chain_reads.py --format prompt --window 32768   # the full prompt
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from pathlib import Path

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.events import Event, ReviewEvent, ToolCallEvent
from loopwright.testing.llamacpp import MODELS, LlamaCppServer, fetch_weights

CHAIN = ["start.txt", "second.txt", "third.txt", "fourth.txt", "fifth.txt", "last.txt"]
VALUE = "7391"
PROMPT = ("Read start.txt. Each file tells you which file to read next; keep reading until a "
          "file gives you the secret value, then answer with that value.")


def write_chain(directory: Path) -> None:
    for here, after in itertools.pairwise(CHAIN):
        (directory / here).write_text(f"Not here. Read {after} next.\n")
    (directory / CHAIN[-1]).write_text(f"The secret value is {VALUE}.\n")


async def one_run(base_url: str, model: str, fmt: str, window: int | None = None) -> None:
    events: list[Event] = []
    with tempfile.TemporaryDirectory() as directory:
        write_chain(Path(directory))
        agent = Agent(model, base_url=base_url, api_key="none", workdir=directory,
                      tools=default_tools(names=["read_file"]), tool_call_format=fmt,
                      temperature=0.0, max_tokens=256, max_turns=14,
                      callbacks=[events.append], context_window=window)
        started = time.monotonic()
        result = await agent.run(PROMPT)
        await agent.aclose()
    read = [str(e.arguments.get("path")) if isinstance(e.arguments, dict) else e.arguments
            for e in events if isinstance(e, ToolCallEvent)]
    reviews = [(e.check, e.verdict) for e in events if isinstance(e, ReviewEvent)]
    print(f"{fmt}: stop {result.stop_reason}, {result.turns} turns, "
          f"{time.monotonic() - started:.0f} s; read {read}; answer {result.output[:120]!r}; "
          f"value found: {VALUE in result.output}; review {reviews}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="1.5b", choices=sorted(MODELS))
    parser.add_argument("--format", choices=["native", "prompt"], action="append",
                        help="tool_call_format (default: both)")
    parser.add_argument("--window", type=int, help="context_window to claim (default: the "
                        "server's own, 8,192: the compact prompt of a small window)")
    args = parser.parse_args()
    weights = fetch_weights(MODELS[args.model])
    with LlamaCppServer(weights, ctx_size=8192) as server:
        for fmt in args.format or ("native", "prompt"):
            await one_run(server.base_url, str(weights), fmt, args.window)


if __name__ == "__main__":
    asyncio.run(main())
