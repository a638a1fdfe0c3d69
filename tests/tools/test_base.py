"""The tool model: schemas from hints and docstrings, validation, sync/async, ctx injection."""

import threading
from typing import Annotated, Literal

import pydantic
import pytest

from loopwright import Tool, ToolContext, tool
from shared_helpers import cyclic_garbage


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


def test_schema_comes_from_type_hints_and_docstring() -> None:
    @tool(read_only=True, tags={"math"})
    def scale(point: Point, factor: Annotated[float, "how much to scale"] = 1.0,
              mode: Literal["up", "down"] = "up", note: str | None = None) -> str:
        """Scale a point.

        Args:
            point: the point to scale
            mode: direction
        """
        return ""

    assert scale.name == "scale" and scale.read_only and scale.tags == {"math"}
    assert scale.description == "Scale a point."
    props = scale.parameters["properties"]
    assert scale.parameters["required"] == ["point"]
    assert props["factor"] == {"default": 1.0, "description": "how much to scale",
                               "type": "number"}
    assert props["mode"]["enum"] == ["up", "down"]
    assert props["mode"]["description"] == "direction"
    assert props["point"]["description"] == "the point to scale"
    assert "title" not in scale.parameters


def test_ctx_parameter_is_injected_not_exposed() -> None:
    @tool
    def where(path: str, ctx: ToolContext) -> str:
        """Where a path is."""
        return str(ctx.workdir / path)

    assert list(where.parameters["properties"]) == ["path"]
    assert where.takes_context


async def test_sync_tools_run_in_a_worker_thread_and_async_tools_are_awaited(tmp_path) -> None:
    main_thread = threading.get_ident()

    @tool
    def sync_tool() -> int:
        """Report the thread."""
        return threading.get_ident()

    @tool
    async def async_tool(n: int) -> int:
        """Double n."""
        return n * 2

    ctx = ToolContext(workdir=tmp_path)
    assert await sync_tool.invoke({}, ctx) != main_thread
    assert await async_tool.invoke(async_tool.validate({"n": 4}), ctx) == 8


def test_validation_coerces_and_rejects() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.validate({"a": "2", "b": 3}) == {"a": 2, "b": 3}
    with pytest.raises(pydantic.ValidationError):
        add.validate({"a": "two", "b": 3})
    with pytest.raises(pydantic.ValidationError):
        add.validate({"a": 1, "b": 2, "c": 3})


def test_a_tool_given_another_arguments_model_validates_with_its_fields() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}
    add.arguments_model = pydantic.create_model("Three", a=(int, ...), b=(int, ...), c=(int, 0))
    assert add.validate({"a": 1, "b": 2}) == {"a": 1, "b": 2, "c": 0}


def test_a_raw_schema_tool_is_checked_against_its_schema() -> None:
    async def run(arguments: dict, ctx: ToolContext) -> str:
        return "ok"

    raw = Tool(name="echo", description="Echo.", function=run, raw_arguments=True,
               parameters={"type": "object", "properties": {"text": {"type": "string"}},
                           "required": ["text"]})
    assert raw.validate({"text": "x"}) == {"text": "x"}
    with pytest.raises(ValueError, match="missing required argument 'text'"):
        raw.validate({})
    with pytest.raises(ValueError, match="should be string"):
        raw.validate({"text": 3})


async def test_a_context_whose_gate_was_asked_is_freed_without_the_collector() -> None:
    """The approval gate's timing wrapper held the context it is set on: a reference cycle
    every tool call left to the garbage collector."""
    async def gate(action: str, detail: str) -> bool:
        return True

    with cyclic_garbage(ToolContext) as left:
        ctx = ToolContext(approve=gate)
        assert await ctx.approve("write", "a file")
        assert ctx.approval_wait >= 0.0
        del ctx
    assert left == []
