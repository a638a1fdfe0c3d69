"""clarify: questions to the user through Agent(clarify=...), or an honest 'nobody is here'."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loopwright import Agent, ToolContext
from loopwright.builtin import clarify, default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


async def test_the_callback_answers_and_the_model_reads_it(tmp_path: Path) -> None:
    asked: list[tuple[str, list[str]]] = []

    def answer(question: str, options: list[str]) -> str:
        asked.append((question, options))
        return options[1]

    script = [Reply(tool_calls=[call("clarify", {"question": "Which DB?",
                                                 "options": ["sqlite", "postgres"]})]),
              Reply(text="Using postgres.")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(names=["clarify"]), clarify=answer,
                      workdir=str(tmp_path))
        result = await agent.run("set up the database")
    assert asked == [("Which DB?", ["sqlite", "postgres"])]
    assert result.output == "Using postgres."
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.content == "The user answered: postgres"


async def test_without_a_callback_the_model_is_told_no_user_is_available(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("clarify", {"question": "Which DB?"})]), Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[clarify], workdir=str(tmp_path))
        result = await agent.run("go")
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert "no user is available" in tool_message.content


async def test_an_async_callback_works_and_clarify_is_interactive(tmp_path: Path) -> None:
    async def answer(question: str, options: list[str]) -> str:
        await asyncio.sleep(0)
        return "blue"

    ctx = ToolContext(workdir=tmp_path, services={"clarify": answer})
    assert await clarify.invoke({"question": "Colour?"}, ctx) == "The user answered: blue"
    assert clarify.interactive and clarify.read_only
