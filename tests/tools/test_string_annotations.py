"""Tools in a module with `from __future__ import annotations`, where every annotation is a
string resolved when the tool is made: `ToolContext` imported for type checkers only, a type
defined in the same function as the tool, a name nothing defines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from loopwright import Agent, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call

if TYPE_CHECKING:  # what a typed code base writes to keep imports cheap
    from decimal import Decimal

    from loopwright import ToolContext


async def run_call(made: Any, arguments: dict[str, Any]) -> ToolResultEvent:
    events: list[Event] = []
    script = [Reply(tool_calls=[call(made.name, arguments, id="c9")]), Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[made],
                      callbacks=[events.append])
        assert (await agent.run("go")).output == "done"
    (outcome,) = [e for e in events if isinstance(e, ToolResultEvent)]
    return outcome


async def test_a_context_imported_for_type_checkers_only_is_the_context() -> None:
    """`@tool` raised `NameError: name 'ToolContext' is not defined`."""
    @tool
    def where(path: str, ctx: ToolContext) -> str:
        return f"{path} in {ctx.call_id}"

    @tool
    def maybe(path: str, context: ToolContext | None = None) -> str:
        return f"{path} in {context.call_id if context else '-'}"

    assert list(where.parameters["properties"]) == list(maybe.parameters["properties"]) == [
        "path"]
    assert (await run_call(where, {"path": "a"})).content == "a in c9"
    assert (await run_call(maybe, {"path": "a"})).content == "a in c9"


async def test_a_type_defined_beside_the_tool_is_resolved_where_tool_is_applied() -> None:
    """`NameError: name 'Box' is not defined`: a class defined in the function that defines
    the tool (a factory, a test) is not in the module."""
    @dataclass
    class Box:
        width: int

    @tool
    def measure(box: Box) -> str:
        return f"{type(box).__name__} {box.width}"

    @tool(read_only=True)
    def measure_again(box: Box) -> str:
        return f"{type(box).__name__} {box.width}"

    assert (await run_call(measure, {"box": {"width": 3}})).content == "Box 3"
    assert (await run_call(measure_again, {"box": {"width": 4}})).content == "Box 4"


def test_a_parameter_type_imported_for_type_checkers_only_is_named() -> None:
    def price(amount: Decimal) -> str:
        return str(amount)

    with pytest.raises(TypeError, match=r"tool 'price': the annotation of parameter 'amount' "
                       r"\('Decimal'\) cannot be resolved: name 'Decimal' is not defined; "
                       r"define or import what it names at the module's top level"):
        tool(price)
