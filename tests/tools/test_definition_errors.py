"""A tool whose parameters cannot be shown to the model is refused where it is defined (`@tool`,
or `Agent(tools=[function])`), with one `TypeError` naming the tool, the parameter and the fix."""

from __future__ import annotations

import sys
import typing
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import typing_extensions

from loopwright import Agent, tool


def test_star_args_are_refused_not_dropped_from_the_schema() -> None:
    """`*names` was left out of the schema: the model could never pass one."""
    def greet(greeting: str, *names: str) -> str:
        return greeting + ", ".join(names)

    with pytest.raises(TypeError, match=r"tool 'greet': parameter \*names cannot be shown to "
                       r"the model .*: give each argument a parameter of its own"):
        tool(greet)


def test_star_star_kwargs_are_refused_when_the_agent_is_made() -> None:
    def configure(name: str, **options: Any) -> str:
        return name

    with pytest.raises(TypeError, match=r"tool 'configure': parameter \*\*options .* take one "
                       "`dict` parameter"):
        Agent("m", tools=[configure])


def test_keyword_only_and_positional_only_parameters_are_taken() -> None:
    @tool
    def scale(value: float, /, factor: float, *, offset: float = 0.0) -> float:
        return value * factor + offset

    assert set(scale.parameters["properties"]) == {"value", "factor", "offset"}
    assert scale.parameters["required"] == ["value", "factor"]


class Connection:
    """Not a JSON type: pydantic has no schema for it."""


def test_an_annotation_without_a_json_schema_names_the_parameter() -> None:
    """It raised pydantic's `PydanticInvalidForJsonSchema`, naming a core schema."""
    def query(sql: str, connection: Connection) -> str:
        return sql

    with pytest.raises(TypeError, match=r"tool 'query': parameter 'connection' \(Connection\) "
                       r"has no JSON schema .*: annotate it with a JSON type") as raised:
        tool(query)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_callable_parameter_is_named_under_the_name_the_tool_was_given() -> None:
    def apply(values: list[int], function: Callable[[int], int]) -> list[int]:
        return [function(v) for v in values]

    with pytest.raises(TypeError, match=r"tool 'map_values': parameter 'function' "):
        tool(name="map_values")(apply)


class TypingAddress(typing.TypedDict):
    city: str


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic reads typing.TypedDict on 3.12")
def test_a_typing_typed_dict_on_python_3_11_says_to_use_typing_extensions() -> None:
    """It raised pydantic's `PydanticUserError` (40 lines of traceback and a link)."""
    def geocode(address: TypingAddress) -> str:
        return address["city"]

    with pytest.raises(TypeError, match=r"tool 'geocode': parameter 'address' \(TypingAddress\) "
                       r"uses a typing\.TypedDict, .* `typing_extensions\.TypedDict` instead"):
        Agent("m", tools=[geocode])


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic reads typing.TypedDict on 3.12")
def test_a_typing_typed_dict_inside_a_list_names_the_parameter_holding_it() -> None:
    def geocode_all(addresses: list[TypingAddress]) -> str:
        return ""

    with pytest.raises(TypeError, match=r"tool 'geocode_all': parameter 'addresses' "
                       r"\(list\[.*TypingAddress\]\) uses a typing\.TypedDict"):
        tool(geocode_all)


class Address(typing_extensions.TypedDict):
    city: str


@dataclass
class Box:
    width: int


def test_typed_dicts_dataclasses_and_json_types_are_taken() -> None:
    @tool
    def ship(address: Address, box: Box, tags: list[str], note: str | None = None) -> str:
        return address["city"]

    assert set(ship.parameters["properties"]) == {"address", "box", "tags", "note"}


def test_parameter_names_that_only_start_like_pydantics_are_taken() -> None:
    @tool
    def describe(model_name: str, model_size: int, private_: bool = False) -> str:
        return model_name

    assert set(describe.parameters["properties"]) == {"model_name", "model_size", "private_"}
    assert describe.validate({"model_name": "m", "model_size": 3}) == {
        "model_name": "m", "model_size": 3, "private_": False}


def test_a_generator_function_is_refused_not_shown_as_its_repr() -> None:
    """The model read '<generator object rows at 0x…>' (and an async generator failed every
    call with "can't be used in 'await' expression")."""
    def rows(n: int) -> Iterator[int]:
        yield from range(n)

    async def stream(n: int) -> AsyncIterator[int]:
        for i in range(n):
            yield i

    for function in (rows, stream):
        with pytest.raises(TypeError, match=rf"tool '{function.__name__}' is a generator "
                           r"function: .* return the values \(`return list\(…\)`"):
            Agent("m", tools=[function])
