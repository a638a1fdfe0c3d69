"""A tool's parameters may be named anything the model can write, and are called as the function
takes them: names of `pydantic.BaseModel`'s own attributes, a leading underscore, positional-only
parameters and a `ToolContext` under any name. Each runs through `@tool`, an `Agent` and the
fake model server, which sends the arguments."""

from __future__ import annotations

import json
import keyword
import warnings
from typing import Any

import pydantic
import pytest

from loopwright import Agent, ToolContext, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call

# every name pydantic's model class holds, derived (its list changes between releases): as field
# names, `json` and `schema` made pydantic warn "shadows an attribute in parent BaseModel" (an
# error under `python -W error`), `model_*` ones were refused, `_private` ones too
PYDANTIC_NAMES = sorted(name for name in dir(pydantic.BaseModel)
                        if name.isidentifier() and not keyword.iskeyword(name))


def function_taking(names: list[str]) -> Any:
    """A tool function with one `int` parameter per name, returning what it was given."""
    source = (f"def takes_all({', '.join(f'{n}: int' for n in names)}) -> dict:\n"
              f"    return {{{', '.join(f'{n!r}: {n}' for n in names)}}}\n")
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the only way to name parameters from a list
    return namespace["takes_all"]


def tool_results(events: list[Event]) -> list[ToolResultEvent]:
    return [event for event in events if isinstance(event, ToolResultEvent)]


async def run_calls(tools: list[Any], *calls: Any) -> list[ToolResultEvent]:
    """The tool results of a run where the model makes `calls`, one reply each, then answers."""
    events: list[Event] = []
    script = [Reply(tool_calls=[one]) for one in calls] + [Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=tools,
                      callbacks=[events.append])
        result = await agent.run("go")
    assert result.output == "done"
    return tool_results(events)


async def test_every_name_of_pydantics_model_class_is_a_parameter_name_without_a_warning(
        ) -> None:
    assert {"json", "schema", "copy", "validate", "model_config", "model_dump"} <= set(
        PYDANTIC_NAMES)
    arguments = {name: index for index, name in enumerate(PYDANTIC_NAMES)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as `python -W error` in CI
        takes_all = tool(function_taking(PYDANTIC_NAMES))
        (outcome,) = await run_calls([takes_all], call("takes_all", arguments))
    assert not outcome.is_error, outcome.content
    assert json.loads(outcome.content) == arguments
    assert list(takes_all.parameters["properties"]) == PYDANTIC_NAMES  # as written, in order
    assert takes_all.parameters["required"] == PYDANTIC_NAMES


async def test_a_leading_underscore_and_a_name_like_the_models_own_fields_reach_the_function(
        ) -> None:
    """The fields are named `p0`, `p1`… inside: a parameter named `p1` must not take another's
    value, nor `p0` be accepted for `_hidden`."""
    @tool
    def shuffle(_hidden: str, p1: str, p0: str = "default") -> str:
        return f"{_hidden}/{p1}/{p0}"

    good, wrong = await run_calls([shuffle], call("shuffle", {"_hidden": "h", "p1": "one"}),
                                  call("shuffle", {"p0": "h", "p1": "one"}))
    assert (good.is_error, good.content) == (False, "h/one/default")
    assert wrong.is_error and "missing required argument '_hidden'" in wrong.content


async def test_a_bad_argument_is_named_as_the_model_wrote_it() -> None:
    @tool
    def count(json: int) -> int:
        return json

    (outcome,) = await run_calls([count], call("count", {"json": "many"}))
    assert outcome.is_error and "'json': Input should be a valid integer" in outcome.content
    assert "p0" not in outcome.content


async def test_positional_only_parameters_are_passed_by_position() -> None:
    """`value` before a `/` was passed as `value=2`: the call failed with "got some
    positional-only arguments passed as keyword arguments"."""
    @tool
    def scale(value: float, /, factor: float, *, offset: float = 0.0) -> float:
        return value * factor + offset

    (outcome,) = await run_calls([scale], call("scale", {"value": 2, "factor": 3, "offset": 1}))
    assert (outcome.is_error, outcome.content) == (False, "7.0")


async def test_the_context_reaches_a_parameter_of_any_name() -> None:
    """`context: ToolContext` was left out of the schema but given as `ctx=`: every call
    failed with "got an unexpected keyword argument 'ctx'"."""
    @tool
    def where(path: str, context: ToolContext) -> str:
        return f"{path} in call {context.call_id}"

    (outcome,) = await run_calls([where], call("where", {"path": "a.txt"}, id="call_7"))
    assert (outcome.is_error, outcome.content) == (False, "a.txt in call call_7")
    assert list(where.parameters["properties"]) == ["path"]


async def test_an_optional_context_is_the_context_and_the_function_still_runs_without_one(
        ) -> None:
    """`ctx: ToolContext | None = None` (so tests can call the function directly) was refused as
    a parameter "with no JSON schema"."""
    @tool
    def whoami(name: str, ctx: ToolContext | None = None) -> str:
        return f"{name}:{ctx.call_id if ctx else 'direct'}"

    assert list(whoami.parameters["properties"]) == ["name"]
    assert whoami("x") == "x:direct"
    (outcome,) = await run_calls([whoami], call("whoami", {"name": "x"}, id="c1"))
    assert outcome.content == "x:c1"


async def test_a_positional_only_context_is_passed_by_position() -> None:
    @tool
    def first(ctx: ToolContext, /, n: int) -> str:
        return f"{ctx.call_id}:{n}"

    (outcome,) = await run_calls([first], call("first", {"n": 4}, id="c2"))
    assert outcome.content == "c2:4"


def test_a_function_taking_the_context_twice_is_refused() -> None:
    def twice(a: ToolContext, b: ToolContext) -> str:
        return ""

    with pytest.raises(TypeError, match="tool 'twice': parameters 'a' and 'b' both take the "
                       "ToolContext: keep one"):
        tool(twice)


async def test_a_parameter_named_ctx_of_another_type_is_an_argument() -> None:
    @tool
    def label(ctx: str) -> str:
        return ctx.upper()

    assert label.parameters["required"] == ["ctx"] and not label.takes_context
    (outcome,) = await run_calls([label], call("label", {"ctx": "abc"}))
    assert outcome.content == "ABC"
