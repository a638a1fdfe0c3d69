"""A number written as text that pydantic reads as NaN or infinity ("NaN", "-Infinity", "1e999")
is refused for a number parameter, as the JSON literal is (tests/library/test_argument_values.py):
a model, or a page it read, could otherwise hand a tool NaN. Text stays text for a `str`
parameter, and a parameter that says it takes NaN (`Field(allow_inf_nan=True)`) gets it."""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any

import pydantic
import pytest
from pydantic import BaseModel, Field

from loopwright import Agent, Tool, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call


class Point(BaseModel):
    x: float
    y: float = 0.0


class Bounds(BaseModel):
    low: float = -math.inf  # a default no model sent: never refused
    high: float = math.inf


@tool
def plain(value: float) -> str:
    """Take a number."""
    return repr(value)


@tool
def optional(value: float | None = None) -> str:
    """Take a number, or none."""
    return repr(value)


@tool
def many(values: list[float]) -> str:
    """Take numbers."""
    return repr(values)


@tool
def modelled(value: Point) -> str:
    """Take a point."""
    return repr(value)


@tool
def constrained(value: Annotated[float, Field(gt=0, description="a positive number")]) -> str:
    """Take a positive number."""
    return repr(value)


@tool
def bounded(value: float = Field(1.0, le=10)) -> str:
    """Take a number up to ten."""
    return repr(value)


@tool
def text(value: str) -> str:
    """Take a text."""
    return repr(value)


@tool
def allowed(value: Annotated[float, Field(allow_inf_nan=True)]) -> str:
    """Take any float."""
    return repr(value)


@tool
def limits(value: Bounds) -> str:
    """Take bounds."""
    return repr((value.low, value.high))


@tool
def infinite_default(value: str, limit: float = math.inf) -> str:
    """Take a text and a limit."""
    return repr((value, limit))


class Loose(BaseModel):
    model_config = pydantic.ConfigDict(allow_inf_nan=True)
    x: float


@tool
def loose(value: Loose) -> str:
    """Take a point that may be NaN."""
    return repr(value.x)


async def outcome_of(made: Tool, arguments: dict[str, Any]) -> ToolResultEvent:
    events: list[Event] = []
    script = [Reply(tool_calls=[call(made.name, arguments)]), Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[made],
                      callbacks=[events.append])
        await agent.run("go")
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    return result


@pytest.mark.parametrize(("made", "arguments", "where", "number"), [
    (plain, {"value": "NaN"}, "value", "nan"),
    (plain, {"value": " -Infinity "}, "value", "-inf"),
    (plain, {"value": "inf"}, "value", "inf"),
    (plain, {"value": "1e999"}, "value", "inf"),
    (optional, {"value": "nan"}, "value", "nan"),
    (many, {"values": [1.5, "-inf", 2]}, "values.1", "-inf"),
    (modelled, {"value": {"x": 1, "y": "NaN"}}, "value.y", "nan"),
    (constrained, {"value": "Infinity"}, "value", "inf"),
    (bounded, {"value": "-inf"}, "value", "-inf"),
    (limits, {"value": {"high": "NaN"}}, "value.high", "nan"),
])
async def test_text_read_as_nan_or_infinity_is_refused_naming_the_parameter(
        made: Tool, arguments: dict[str, Any], where: str, number: str) -> None:
    result = await outcome_of(made, arguments)
    assert result.is_error
    assert (f"the arguments hold a number JSON does not have ({number}) in {where!r}"
            in result.content)


@pytest.mark.parametrize(("made", "arguments", "ran"), [
    (text, {"value": "NaN"}, "'NaN'"),
    (text, {"value": "-Infinity"}, "'-Infinity'"),
    (infinite_default, {"value": "inf"}, "('inf', inf)"),
    (limits, {"value": {"low": 0}}, "(0.0, inf)"),
    (allowed, {"value": "NaN"}, "nan"),
    (allowed, {"value": "-inf"}, "-inf"),
    (loose, {"value": {"x": "inf"}}, "inf"),
    (plain, {"value": "2.5"}, "2.5"),
])
async def test_text_a_parameter_takes_as_it_is_runs(made: Tool, arguments: dict[str, Any],
                                                    ran: str) -> None:
    result = await outcome_of(made, arguments)
    assert (result.is_error, result.content) == (False, ran)


async def test_the_json_literal_names_its_parameter_too() -> None:
    result = await outcome_of(many, '{"values": [1, NaN]}')  # type: ignore[arg-type]
    assert result.is_error
    assert "the arguments hold a number JSON does not have (nan) in 'values.1'" in result.content


@dataclasses.dataclass
class Span:
    start: float
    end: float = math.inf


@tool
def spanned(value: Span) -> str:
    """Take a span."""
    return repr((value.start, value.end))


async def test_a_dataclass_field_is_checked_but_not_its_default() -> None:
    refused = await outcome_of(spanned, {"value": {"start": "-inf"}})
    taken = await outcome_of(spanned, {"value": {"start": 1}})
    assert "does not have (-inf) in 'value.start'" in refused.content
    assert (taken.is_error, taken.content) == (False, "(1.0, inf)")


@tool
def rotate(angle: complex) -> str:
    """Rotate by a complex number."""
    return repr(angle)


async def test_a_complex_parameter_is_checked_too() -> None:
    refused = await outcome_of(rotate, {"angle": "inf+1j"})
    taken = await outcome_of(rotate, {"angle": "1+2j"})
    assert "does not have ((inf+1j)) in 'angle'" in refused.content
    assert (taken.is_error, taken.content) == (False, "(1+2j)")
