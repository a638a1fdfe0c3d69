"""The code a library user writes first, typed: `tests/library/test_first_hour.py` runs it
against the fake model server and checks it with `mypy --strict` against the package, so that
what the docs recommend also type-checks (`contextlib.aclosing(agent.stream(...))` did not)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import typing
from typing import Literal, Optional

from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs this one on Python 3.11

from loopwright import Agent, Event, RunHandle, RunResult, ToolContext, tool
from loopwright.review import Check, ReviewView, Verdict, send_back


class Address(BaseModel):
    street: str
    city: str


class Filter(TypedDict):
    field: str
    value: int


@dataclasses.dataclass
class Deps:
    prefix: str


class Answer(BaseModel):
    text: str
    confidence: float


@tool
def geocode(address: Address, precision: Literal["city", "street"] = "city",
            country: Optional[str] = None) -> dict[str, float]:  # noqa: UP045  # users write it
    """Find the coordinates of an address.

    Args:
        address: where to look
        precision: how exact the answer must be
        country: an ISO code, if known
    """
    return {"lat": 45.76, "lon": 4.83}


@tool(read_only=True)
async def search(filters: list[Filter], ctx: ToolContext[Deps], limit: int = 10) -> str:
    """Search the records."""
    return f"{ctx.deps.prefix}: {len(filters)} filter(s), at most {limit}"


class NamesACity(Check):
    name = "names_a_city"
    position = "first"

    async def review(self, view: ReviewView) -> Verdict | None:
        if "Lyon" not in view.answer:
            return send_back("Name the city.", "no city named")
        return None


async def typed_run(base_url: str) -> None:
    agent: Agent[Deps, Answer] = Agent("gpt-4o-mini", base_url=base_url, api_key="k",
                                       tools=[geocode, search], output_type=Answer)
    result: RunResult[Answer] = await agent.run("Where is it?", deps=Deps(prefix="db"))
    print(result.output.text, result.output.confidence, result.stop_reason)


async def streamed(base_url: str) -> None:
    agent = Agent("gpt-4o-mini", base_url=base_url, api_key="k",
                  review_checks=[NamesACity()])
    async with contextlib.aclosing(agent.stream("Which city?")) as events:
        async for event in events:
            if event.type == "text_delta":
                print(event.text, end="")
    print()
    handle: RunHandle = await agent.start("And the river?")
    handle.steer("One word.")
    done = await handle
    typing.assert_type(done, RunResult[str])  # not Any: the handle knows the output's type
    print(done.output)


def on_event(event: Event) -> None:
    if event.type == "tool_result":
        print("tool:", event.content)


async def main(base_url: str) -> None:
    await typed_run(base_url)
    await streamed(base_url)
    sync_agent = Agent("gpt-4o-mini", base_url=base_url, api_key="k", callbacks=[on_event],
                       tools=[geocode])
    answer: str = sync_agent.chat("Geocode it.")  # blocks: a loop of its own on a thread
    print(answer)
    print(geocode(Address(street="rue", city="Lyon"))["lat"])  # still the function


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
