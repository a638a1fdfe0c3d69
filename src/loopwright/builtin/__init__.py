"""Built-in tools for a coding agent: files, search, shell, todo list, web fetch, clarify and
delegate (sub-agents).

`Agent()` gets none of them unless asked: `Agent(tools=default_tools())`. The CLI uses the default
set, narrowed by `--tools` or `--read-only`.

The tool modules load on first use (`from loopwright.builtin import bash` or `default_tools()`),
so that `import loopwright` stays cheap for agents that use none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from loopwright.builtin.files import edit_file, read_file, write_file
    from loopwright.builtin.listing import glob, list_dir
    from loopwright.builtin.patch import apply_patch
    from loopwright.builtin.questions import clarify
    from loopwright.builtin.search import grep, make_grep
    from loopwright.builtin.shell import bash
    from loopwright.builtin.todos import todo
    from loopwright.builtin.web import web_fetch
    from loopwright.tools.base import Tool

# Tool name → the module defining it, in advertisement order. No module is named like a tool: the
# import system would bind the module over the lazily loaded tool of the same name.
_MODULES: dict[str, str] = {
    "read_file": "files", "write_file": "files", "edit_file": "files", "apply_patch": "patch",
    "list_dir": "listing", "glob": "listing", "grep": "search", "bash": "shell", "todo": "todos",
    "web_fetch": "web", "clarify": "questions",
}
_OTHER_EXPORTS = {"make_grep": "search"}
# Tools built by a factory: name → (module, factory). `delegate` shares its module's name, so it
# is reachable through `default_tools()` only, never as `loopwright.builtin.delegate`.
_FACTORIES: dict[str, tuple[str, str]] = {"delegate": ("delegate", "make_delegate_tool")}
TOOL_NAMES: tuple[str, ...] = (*_MODULES, *_FACTORIES)
# What a read-only agent may use: nothing here changes the workspace or runs commands. `todo`
# only edits the run's own task list, so it stays available to plan.
READ_ONLY_NAMES = frozenset({"read_file", "list_dir", "glob", "grep", "todo", "web_fetch",
                             "clarify"})


def default_tools(read_only: bool = False, names: Iterable[str] | None = None) -> list[Tool]:
    """The built-in tools, optionally narrowed to read-only ones and/or to the given names.

    Unknown names raise `ConfigError` listing the available ones."""
    chosen = list(TOOL_NAMES)
    if names is not None:
        wanted = {name.strip() for name in names if name.strip()}
        unknown = sorted(wanted - set(TOOL_NAMES))
        if unknown:
            raise ConfigError(f"unknown built-in tool(s) {', '.join(unknown)}; available: "
                              f"{', '.join(TOOL_NAMES)}")
        chosen = [name for name in TOOL_NAMES if name in wanted]
    if read_only:
        chosen = [name for name in chosen if name in READ_ONLY_NAMES]
    return [_load(name) for name in chosen]


def all_tools() -> list[Tool]:
    """Every built-in tool."""
    return default_tools()


def _load(name: str) -> Any:
    if name in _FACTORIES:
        module, factory = _FACTORIES[name]
        return getattr(importlib.import_module(f"loopwright.builtin.{module}"), factory)()
    module = _MODULES.get(name) or _OTHER_EXPORTS[name]
    return getattr(importlib.import_module(f"loopwright.builtin.{module}"), name)


def __getattr__(name: str) -> Any:
    if name in _MODULES or name in _OTHER_EXPORTS:
        return _load(name)
    raise AttributeError(f"module 'loopwright.builtin' has no attribute {name!r}")


__all__ = [
    "READ_ONLY_NAMES",
    "TOOL_NAMES",
    "all_tools",
    "apply_patch",
    "bash",
    "clarify",
    "default_tools",
    "edit_file",
    "glob",
    "grep",
    "list_dir",
    "make_grep",
    "read_file",
    "todo",
    "web_fetch",
    "write_file",
]
