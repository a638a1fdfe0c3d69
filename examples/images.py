"""Images (a path, bytes or a URL) and PDFs in a prompt; tools may return them too."""

import asyncio

from loopwright import Agent, image


async def main() -> None:
    agent = Agent("gpt-4o-mini")
    result = await agent.run(["What does this chart show?",
                              image("https://example.com/chart.png")])  # or document("a.pdf")
    print(result.output)


asyncio.run(main())
