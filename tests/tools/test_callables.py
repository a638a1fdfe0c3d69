"""What a library user passes as a tool besides a plain function: a `functools.partial` that
binds a dependency, a callable object, a bound method — each named, described and called
through an `Agent` and the fake model server."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call


async def run_call(tools: list[Any], name: str, arguments: dict[str, Any]
                   ) -> tuple[ToolResultEvent, dict[str, Any]]:
    """The result of one call, and the tool as the first request offered it."""
    events: list[Event] = []
    script = [Reply(tool_calls=[call(name, arguments)]), Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=tools,
                      callbacks=[events.append])
        assert (await agent.run("go")).output == "done"
    (outcome,) = [e for e in events if isinstance(e, ToolResultEvent)]
    return outcome, server.model_requests[0].body["tools"][0]["function"]


def search(query: str, index: dict[str, str], limit: int = 3) -> str:
    """Search an index.

    Args:
        query: What to look for.
        index: Where to look.
        limit: How many results.
    """
    return index.get(query, "nothing")[:limit]


async def test_a_partial_is_the_function_it_wraps_with_the_bound_arguments_hidden() -> None:
    """`Agent(tools=[partial(search, index=…)])` raised `AttributeError: 'functools.partial'
    object has no attribute '__name__'`."""
    bound = functools.partial(search, index={"cat": "feline"})
    outcome, offered = await run_call([bound], "search", {"query": "cat", "limit": 4})
    assert (outcome.is_error, outcome.content) == (False, "feli")
    assert offered["description"] == "Search an index."
    assert offered["parameters"]["properties"]["query"]["description"] == "What to look for."
    assert offered["parameters"]["properties"]["index"]["default"] == {"cat": "feline"}


class Counter:
    """Count the words of a text."""

    def __call__(self, text: str) -> int:
        return len(text.split())


async def test_a_callable_object_is_named_after_its_class_and_described_by_it() -> None:
    outcome, offered = await run_call([Counter()], "Counter", {"text": "a b c"})
    assert (outcome.is_error, outcome.content) == (False, "3")
    assert offered["description"] == "Count the words of a text."
    assert tool(name="count_words")(Counter()).name == "count_words"


class Shelf:
    def __init__(self) -> None:
        self.books = ["Dune"]

    def find(self, title: str) -> str:
        """Find a book on the shelf."""
        return "yes" if title in self.books else "no"


async def test_a_bound_method_takes_no_self() -> None:
    outcome, offered = await run_call([Shelf().find], "find", {"title": "Dune"})
    assert (outcome.is_error, outcome.content) == (False, "yes")
    assert list(offered["parameters"]["properties"]) == ["title"]


def test_a_method_decorated_in_its_class_body_is_refused_with_the_fix() -> None:
    """`self` became a required argument the model had to send (and could never send right)."""
    def lookup(self, key: str) -> str:  # what `@tool` sees inside a class body
        return key

    with pytest.raises(TypeError, match=r"tool 'lookup': its first parameter is 'self', so "
                       r"@tool was applied to a method in its class body .* "
                       r"\(`tool\(instance\.method\)`"):
        tool(lookup)


def test_a_parameter_named_self_that_is_typed_is_an_argument() -> None:
    @tool
    def describe(self: str, other: str = "") -> str:
        return self + other

    assert describe.parameters["required"] == ["self"]
