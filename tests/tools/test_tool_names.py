"""Tool names: a name every provider refuses is refused where the tool is defined, names that
differ only in case are two tools, and a name a model makes up — unicode, `__class__`-like,
endless — is an unknown tool, told back in a bounded error. Through `@tool`, an `Agent` and
the fake model server."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, Tool, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call


async def run_calls(tools: list[Any], *calls: Any) -> list[ToolResultEvent]:
    """The tool results of a run where the model makes `calls`, one reply each."""
    events: list[Event] = []
    # a review note may ask again after an unknown tool: the answer is there for it
    script = [Reply(tool_calls=[one]) for one in calls] + [Reply("done")] * 3
    with FakeModelServer(script, strict=False) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=tools,
                      callbacks=[events.append])
        assert (await agent.run("go")).output == "done"
    return [e for e in events if isinstance(e, ToolResultEvent)]


@pytest.mark.parametrize("name", ["get weather", "météo", "read.file", "x" * 65, "tab\tname"])
def test_a_name_a_provider_refuses_is_refused_where_the_tool_is_defined(name: str) -> None:
    """It was taken, and OpenAI and Anthropic answered every request offering it with a 400
    ("does not match '^[a-zA-Z0-9_-]{1,64}$'")."""
    def forecast(city: str) -> str:
        return city

    with pytest.raises(ValueError, match="is not one every provider accepts: use 1 to 64 ASCII"):
        tool(name=name)(forecast)
    with pytest.raises(ValueError, match="is not one every provider accepts"):
        Tool(name=name, description="d", parameters={"type": "object"}, function=forecast)


def test_an_empty_name_is_refused() -> None:
    async def run(arguments: dict[str, Any], ctx: Any) -> str:
        return ""

    with pytest.raises(ValueError, match="tool name '' is not one every provider accepts"):
        Tool(name="", description="d", parameters={"type": "object"}, function=run,
             raw_arguments=True)


def test_a_function_whose_own_name_a_provider_refuses_is_refused_with_the_fix() -> None:
    def météo(ville: str) -> str:
        return ville

    with pytest.raises(ValueError, match=r"e\.g\. @tool\(name=\"get_weather\"\)"):
        Agent("m", tools=[météo])


def test_names_every_provider_takes_are_taken() -> None:
    def forecast(city: str) -> str:
        return city

    for name in ("x" * 64, "get-weather_2", "A", "__class__", "_"):
        assert tool(name=name)(forecast).name == name


async def test_names_that_differ_only_in_case_are_two_tools() -> None:
    @tool
    def Read(path: str) -> str:
        return f"upper {path}"

    @tool(name="read")
    def read_lower(path: str) -> str:
        return f"lower {path}"

    upper, lower, shouted = await run_calls(
        [Read, read_lower], call("Read", {"path": "a"}), call("read", {"path": "b"}),
        call("READ", {"path": "c"}))
    assert (upper.content, lower.content) == ("upper a", "lower b")
    assert shouted.is_error and "there is no tool named 'READ'" in shouted.content


async def test_a_made_up_name_is_an_unknown_tool_whatever_it_holds() -> None:
    @tool
    def read(path: str) -> str:
        return path

    outcomes = await run_calls([read], call("__class__", {}), call("read\u200b", {"path": "a"}),
                               call("constructor", {}))
    assert all(o.is_error and "there is no tool named" in o.content for o in outcomes)


async def test_an_endless_made_up_name_is_not_echoed_back_whole() -> None:
    """The error quoted the model's 100,000-character name in full: a 100 kB result, cut and
    spilled to a file like a tool's runaway output."""
    @tool
    def read(path: str) -> str:
        return path

    (outcome,) = await run_calls([read], call("x" * 100_000, {}))
    assert outcome.is_error and len(outcome.content) < 500
    assert "there is no tool named 'xxx" in outcome.content
    assert "(100,000 characters)" in outcome.content
