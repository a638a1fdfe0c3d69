"""The tool catalogue of one agent: what exists, what is advertised on a given turn, and lookup."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any

from loopwright.messages import ToolSpec
from loopwright.tools.base import Tool, tool_from_function


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """A `Tool` from a Tool or a plain function (decorated on the fly)."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return tool_from_function(obj)
    raise TypeError(f"not a tool: {obj!r} (pass functions or @tool-decorated functions)")


class ToolRegistry:
    """Tools by name, in registration order (which is also advertisement order, so that a cached
    prompt prefix survives: newly activated tools are appended, never inserted)."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = (), *,
                 hidden: Iterable[str] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.hidden: set[str] = set(hidden)
        for item in tools:
            self.add(as_tool(item))

    def add(self, item: Tool) -> None:
        if item.name in self._tools:
            raise ValueError(f"two tools are named {item.name!r}; tool names must be unique")
        self._tools[item.name] = item

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool the model may call by this name (hidden tools are not callable)."""
        if name in self.hidden:
            return None
        return self._tools.get(name)

    def visible(self) -> list[Tool]:
        return [t for t in self._tools.values() if t.name not in self.hidden]

    def specs(self, tools: Iterable[Tool], *, strict: bool = False) -> list[ToolSpec]:
        return [t.spec(strict=strict) for t in tools]

    def suggest(self, name: str, limit: int = 8) -> list[str]:
        """Callable tool names, the closest to `name` first."""
        names = [t.name for t in self.visible()]
        close = difflib.get_close_matches(name, names, n=limit, cutoff=0.0)
        return close + [n for n in names if n not in close][: max(0, limit - len(close))]
