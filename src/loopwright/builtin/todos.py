"""`todo`: a task list the model keeps for itself during a run, in `ctx.state["todos"]`.

The model sends the whole list each time (ids keep items stable across updates); calling it with
no list shows the current one. The list lives as long as the run's tool state.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic

from loopwright.errors import ToolError
from loopwright.tools.base import Tool, ToolContext

STATE_KEY = "todos"
Status = Literal["pending", "in_progress", "done"]
_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class TodoItem(pydantic.BaseModel):
    """One task."""

    model_config = pydantic.ConfigDict(extra="forbid")
    id: str = pydantic.Field(min_length=1)
    content: str = pydantic.Field(min_length=1)
    status: Status = "pending"


_ITEMS = pydantic.TypeAdapter(list[TodoItem])

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The complete, updated task list (omit to just show the current one).",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Stable id, e.g. \"1\"."},
                    "content": {"type": "string", "description": "What to do, imperative."},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "done"]},
                },
                "required": ["id", "content", "status"],
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


def _todo(arguments: dict[str, Any], ctx: ToolContext) -> str:
    raw = arguments.get("todos")
    if raw is not None:
        try:
            items = _ITEMS.validate_python(raw)
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                 for e in exc.errors())
            raise ToolError(f"invalid todo list: {problems}") from exc
        ids = [item.id for item in items]
        if len(ids) != len(set(ids)):
            raise ToolError("todo ids must be unique.")
        ctx.state[STATE_KEY] = [item.model_dump() for item in items]
    return render_todos(ctx.state.get(STATE_KEY) or [])


def render_todos(items: list[dict[str, Any]]) -> str:
    """The list as the model (and a terminal) reads it, with a progress count."""
    if not items:
        return "The todo list is empty."
    done = sum(1 for item in items if item["status"] == "done")
    lines = [f"{_MARKS[item['status']]} {item['id']}. {item['content']}" for item in items]
    note = ""
    if sum(1 for item in items if item["status"] == "in_progress") > 1:
        note = "\nNote: keep one task in_progress at a time."
    return f"Todo list ({done}/{len(items)} done):\n" + "\n".join(lines) + note


todo = Tool(
    name="todo",
    description=(
        "Keep a task list for multi-step work: send the complete updated list each time (each "
        "item: id, content, status pending|in_progress|done); call with no arguments to see it. "
        "Mark a task in_progress before starting it and done as soon as it is finished."),
    parameters=_SCHEMA,
    function=_todo,
    raw_arguments=True,
    core=True,
    tags=frozenset({"planning"}),
)
