"""`--local`: how long the embedded model takes to be ready and to answer one short task.

    python bench/local_model.py              # 3 repetitions, weights already cached
    python bench/local_model.py --reps 1 --threads 2

Each repetition starts llama.cpp on the cached 1.5B (`loopwright.local.local_model`), times the
server's start until it answers `/health`, then one `Agent.run` of a short task with the default
tools and prompt (first request: the whole prompt is evaluated; the answer is a few tokens), and
stops the server. Figures depend on the CPU and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.local import local_model


async def one_task(options: dict[str, object]) -> tuple[float, int, str]:
    agent = Agent(**options, tools=default_tools(), temperature=0.0)  # type: ignore[arg-type]
    started = time.perf_counter()
    result = await agent.run("What is 2 + 2? Reply with the number only.")
    await agent.aclose()
    return time.perf_counter() - started, result.usage.input_tokens, result.output.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    starts, answers = [], []
    for _ in range(args.reps):
        started = time.perf_counter()
        with local_model(threads=args.threads) as served:
            starts.append(time.perf_counter() - started)
            seconds, prompt_tokens, output = asyncio.run(one_task(served.agent_options()))
            answers.append(seconds)
        print(f"ready {starts[-1]:.1f}s · answer {seconds:.1f}s · {prompt_tokens:,} prompt "
              f"tokens · {output!r}")
    print(f"\nCPUs {os.cpu_count()} · median ready {statistics.median(starts):.1f}s · "
          f"median answer {statistics.median(answers):.1f}s over {args.reps} runs")


if __name__ == "__main__":
    main()
