"""Typed output and dependencies: `Agent[Deps, Output]`."""

import asyncio
from dataclasses import dataclass

from pydantic import BaseModel

from loopwright import Agent, ToolContext, tool


@dataclass
class Deps:
    populations: dict[str, int]  # e.g. a database handle in a real program


class CityReport(BaseModel):
    city: str
    population: int
    summary: str


@tool(read_only=True)
def population(city: str, ctx: ToolContext[Deps]) -> int:
    """The population of a city."""
    return ctx.deps.populations[city]


async def main() -> None:
    agent: Agent[Deps, CityReport] = Agent(  # the types of `deps=` and of `result.output`
        "gpt-4o-mini", tools=[population], output_type=CityReport,
        output_retries=2)  # invalid output goes back with the errors, twice at most
    deps = Deps(populations={"Lyon": 522_250})
    result = await agent.run("Report on Lyon.", deps=deps, raise_on_error=True)
    report: CityReport = result.output  # validated; mypy knows its type
    print(report.city, report.population, report.summary)


asyncio.run(main())
