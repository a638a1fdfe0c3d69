"""What a parameter's type, `Field` and default say reaches the schema the model is shown and
the values the function gets: constraints, descriptions and aliases of `Annotated[…, Field()]`,
a `Field` as the default, defaults with no JSON form, mutable defaults, recursive models and
`TypedDict`s with `NotRequired` keys — through `@tool`, an `Agent` and the fake model server."""

from __future__ import annotations

import warnings
from typing import Annotated, Any

import pydantic
import typing_extensions
from pydantic import Field

from loopwright import Agent, Tool, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.schema import clean_schema


async def run_calls(tools: list[Any], *calls: Any, **options: Any
                    ) -> tuple[list[ToolResultEvent], dict[str, Any]]:
    """The tool results of a run where the model makes `calls`, one reply each, and the
    parameters schema of the first tool as the first request showed it."""
    events: list[Event] = []
    script = [Reply(tool_calls=[one]) for one in calls] + [Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=tools,
                      callbacks=[events.append], **options)
        assert (await agent.run("go")).output == "done"
    shown = server.model_requests[0].body["tools"][0]["function"]["parameters"]
    return [e for e in events if isinstance(e, ToolResultEvent)], shown


async def test_a_fields_description_and_bounds_reach_the_model_and_are_enforced() -> None:
    """`Annotated[int, Field(description=…)]` lost its description: the tool's own
    `Field(description=None)` replaced it."""
    @tool
    def take(count: Annotated[int, Field(ge=0, le=10, description="How many to take.")]
             ) -> int:
        return count

    (good, bad), shown = await run_calls([take], call("take", {"count": 3}),
                                         call("take", {"count": 11}))
    assert shown["properties"]["count"] == {"description": "How many to take.", "maximum": 10,
                                            "minimum": 0, "type": "integer"}
    assert (good.is_error, good.content) == (False, "3")
    assert bad.is_error and "less than or equal to 10" in bad.content


async def test_a_docstring_does_not_replace_a_fields_own_description() -> None:
    @tool
    def take(count: Annotated[int, Field(description="From the Field.")]) -> int:
        """Take.

        Args:
            count: From the docstring.
        """
        return count

    _, shown = await run_calls([take], call("take", {"count": 1}))
    assert shown["properties"]["count"]["description"] == "From the Field."


async def test_a_fields_own_alias_is_the_name_the_model_sees() -> None:
    @tool
    def start(begin: Annotated[int, Field(alias="from")]) -> int:
        return begin

    (outcome,), shown = await run_calls([start], call("start", {"from": 4}))
    assert list(shown["properties"]) == ["from"]
    assert (outcome.is_error, outcome.content) == (False, "4")


async def test_a_field_as_the_default_is_the_parameters_field() -> None:
    """`items: list[str] = Field(default_factory=list)` gave the function the `FieldInfo`
    itself (`len()` of it raised), and pydantic warned while the schema was made."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def count(items: list[str] = Field(default_factory=list),  # noqa: B008 (under test)
                  limit: int = Field(5, ge=1)) -> str:
            return f"{len(items)}/{limit}"

    (empty, bad), shown = await run_calls([count], call("count", {}),
                                          call("count", {"limit": 0}))
    assert (empty.is_error, empty.content) == (False, "0/5")
    assert bad.is_error and "greater than or equal to 1" in bad.content
    assert shown["properties"]["limit"] == {"default": 5, "minimum": 1, "type": "integer"}


class Colour:
    """A default with no JSON form."""

    def __repr__(self) -> str:
        return "Colour()"


async def test_a_default_with_no_json_form_is_left_out_of_the_schema_without_a_warning(
        ) -> None:
    """pydantic's `PydanticJsonSchemaWarning` raised under `python -W error`."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def paint(wall: str, colour: Any = Colour()) -> str:  # noqa: B008 (under test)
            return f"{wall} {colour!r}"

    (outcome,), shown = await run_calls([paint], call("paint", {"wall": "north"}))
    assert shown["properties"]["colour"] == {}
    assert outcome.content == "north Colour()"


async def test_a_mutable_default_is_fresh_for_every_call() -> None:
    @tool
    def collect(item: str, seen: list[str] = []) -> str:  # noqa: B006 (the case under test)
        seen.append(item)
        return ",".join(seen)

    outcomes, _ = await run_calls([collect], call("collect", {"item": "a"}),
                                  call("collect", {"item": "b"}))
    assert [o.content for o in outcomes] == ["a", "b"]


class Node(pydantic.BaseModel):
    name: str
    children: list[Node] = []


async def test_a_recursive_model_keeps_its_definitions_and_validates_at_every_depth() -> None:
    @tool
    def size(tree: Node) -> int:
        return 1 + sum(size(child) for child in tree.children)

    tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    (good, bad), shown = await run_calls(
        [size], call("size", {"tree": tree}),
        call("size", {"tree": {"name": "a", "children": [{"children": []}]}}))
    assert shown["properties"]["tree"] == {"$ref": "#/$defs/Node"} and "Node" in shown["$defs"]
    assert (good.is_error, good.content) == (False, "3")
    assert bad.is_error and "missing required argument 'tree.children.0.name'" in bad.content


async def test_nulls_strict_mode_sends_for_nested_optionals_mean_not_given() -> None:
    """Strict mode makes every field required and the optional ones nullable, so the model
    sends `null` for each one it leaves out: a nested model's `children: null` and a
    `NotRequired` key's `size: null` failed validation (only top-level nulls were dropped)."""
    @tool
    def size(tree: Node) -> int:
        return 1 + sum(size(child) for child in tree.children)

    (outcome,), shown = await run_calls(
        [size], call("size", {"tree": {"name": "a", "children": [
            {"name": "b", "children": None}]}}), strict_tools=True)
    assert shown["$defs"]["Node"]["required"] == ["name", "children"]  # strict form was sent
    assert (outcome.is_error, outcome.content) == (False, "2")


class Options(typing_extensions.TypedDict):
    name: str
    size: typing_extensions.NotRequired[int]
    note: typing_extensions.NotRequired[str | None]


async def test_a_typed_dicts_not_required_keys_may_be_left_out_or_sent_as_null() -> None:
    @tool
    def describe(options: Options) -> str:
        return repr(sorted(options.items()))

    absent, null, kept_null, missing = (await run_calls(
        [describe], call("describe", {"options": {"name": "a"}}),
        call("describe", {"options": {"name": "a", "size": None}}),
        call("describe", {"options": {"name": "a", "note": None}}),
        call("describe", {"options": {"size": 2}})))[0]
    assert absent.content == null.content == "[('name', 'a')]"
    assert kept_null.content == "[('name', 'a'), ('note', None)]"  # null is a value it takes
    assert missing.is_error and "missing required argument 'options.name'" in missing.content


async def test_nulls_for_nested_optionals_of_a_draft_7_schema_mean_not_given() -> None:
    """A raw schema (an MCP server's) keeps its recursive types under draft-07's `definitions`:
    `children: null` inside failed the schema check."""
    seen: list[dict[str, Any]] = []

    async def record(arguments: dict[str, Any], ctx: Any) -> str:
        seen.append(arguments)
        return "ok"

    node = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}
    remote = Tool(name="record", description="Record a tree.", function=record,
                  raw_arguments=True, parameters=clean_schema({
                      "type": "object", "required": ["tree"], "definitions": {"Node": node},
                      "properties": {"tree": {"$ref": "#/definitions/Node"}}}))
    tree = {"name": "a", "children": [{"name": "b", "children": None}]}
    (outcome,), _ = await run_calls([remote], call("record", {"tree": tree}))
    assert (outcome.is_error, outcome.content) == (False, "ok")
    assert seen == [{"tree": {"name": "a", "children": [{"name": "b"}]}}]
