"""A tool, a run, a stream and the sync wrapper (the guide's first library snippet)."""

import asyncio

from loopwright import Agent, tool


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""  # docstring → description; type hints → JSON schema
    return a + b


async def main() -> None:
    agent = Agent("gpt-4o-mini", tools=[add])  # settings: keyword args, loopwright.toml, env
    result = await agent.run("What is 2+3?")  # RunResult: output, stop_reason, usage, …
    print(result.output, result.stop_reason)
    async for event in agent.stream("What is 4+5?"):  # typed events: turn_start, text_delta, …
        if event.type == "text_delta":
            print(event.text, end="", flush=True)
    print()
    print(agent.chat("What is 6+7?"))  # sync; inside a running loop it uses a private one
    assert add(2, 3) == 5  # a tool is still its function: test it directly


asyncio.run(main())
