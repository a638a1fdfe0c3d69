"""A batch of tasks from a JSONL file, from Python (the README's batch snippet)."""

import asyncio
from pathlib import Path

from loopwright import tool
from loopwright.batch import run_batch


@tool(read_only=True)
def my_tool(text: str) -> str:
    """Repeat the text."""
    return text


async def main() -> None:
    Path("tasks.jsonl").write_text('{"id": "add-1", "prompt": "2+3?", "expected": "5"}\n')
    report = await run_batch("tasks.jsonl", "out", concurrency=64, model="gpt-4o-mini",
                             trajectories="openai", tools=[my_tool])  # or a list of task dicts
    print(f"{report.summary.solved_share:.0%} solved")


asyncio.run(main())
