"""todo: the model's own task list in the run's tool state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopwright import Tool, ToolContext, ToolError
from loopwright.builtin import todo


async def call_tool(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.invoke(tool.validate(arguments), ctx)
    assert isinstance(result, str)
    return result


async def test_the_list_is_kept_in_state_and_rendered(tmp_path: Path) -> None:
    ctx = ToolContext(workdir=tmp_path)
    items = [{"id": "1", "content": "Read the code", "status": "done"},
             {"id": "2", "content": "Fix the bug", "status": "in_progress"},
             {"id": "3", "content": "Run the tests", "status": "pending"}]
    text = await call_tool(todo, ctx, todos=items)
    assert text.splitlines() == ["Todo list (1/3 done):", "[x] 1. Read the code",
                                 "[~] 2. Fix the bug", "[ ] 3. Run the tests"]
    assert ctx.state["todos"] == items
    assert await call_tool(todo, ctx) == text  # no arguments: show it


async def test_empty_list_and_validation_errors(tmp_path: Path) -> None:
    ctx = ToolContext(workdir=tmp_path)
    assert await call_tool(todo, ctx) == "The todo list is empty."
    # the schema's enum is checked before the tool runs (ValueError from validate)
    with pytest.raises(ValueError, match=r"status.*'later' is not one of"):
        await call_tool(todo, ctx, todos=[{"id": "1", "content": "x", "status": "later"}])
    with pytest.raises(ToolError, match="unique"):
        await call_tool(todo, ctx, todos=[{"id": "1", "content": "x", "status": "done"},
                                          {"id": "1", "content": "y", "status": "done"}])


async def test_more_than_one_task_in_progress_gets_a_note(tmp_path: Path) -> None:
    items = [{"id": str(n), "content": "t", "status": "in_progress"} for n in (1, 2)]
    assert "one task in_progress" in await call_tool(todo, ToolContext(workdir=tmp_path),
                                                     todos=items)


def test_schema_is_precise() -> None:
    item = todo.parameters["properties"]["todos"]["items"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "done"]
    assert item["required"] == ["id", "content", "status"]
    assert not todo.read_only
