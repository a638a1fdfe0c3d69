"""Built-in tools for a coding agent: files, search, shell, todo list, web fetch and clarify.

`Agent()` gets none of them unless asked: `Agent(tools=default_tools())`. The CLI uses the default
set, narrowed by `--tools` or `--read-only`.
"""

from __future__ import annotations

from collections.abc import Iterable

from loopwright.builtin.clarify import clarify
from loopwright.builtin.files import edit_file, read_file, write_file
from loopwright.builtin.listing import glob, list_dir
from loopwright.builtin.patch import apply_patch
from loopwright.builtin.search import grep, make_grep
from loopwright.builtin.shell import bash
from loopwright.builtin.todo import todo
from loopwright.builtin.web import web_fetch
from loopwright.errors import ConfigError
from loopwright.tools.base import Tool

ALL_TOOLS: tuple[Tool, ...] = (
    read_file, write_file, edit_file, apply_patch, list_dir, glob, grep, bash, todo, web_fetch,
    clarify,
)
# What a read-only agent may use: nothing here changes the workspace or runs commands. `todo`
# only edits the run's own task list, so it stays available to plan.
READ_ONLY_NAMES = frozenset({"read_file", "list_dir", "glob", "grep", "todo", "web_fetch",
                             "clarify"})


def default_tools(read_only: bool = False, names: Iterable[str] | None = None) -> list[Tool]:
    """The built-in tools, optionally narrowed to read-only ones and/or to the given names.

    Unknown names raise `ConfigError` listing the available ones."""
    chosen = list(ALL_TOOLS)
    if names is not None:
        wanted = [name.strip() for name in names if name.strip()]
        known = {t.name: t for t in ALL_TOOLS}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise ConfigError(f"unknown built-in tool(s) {', '.join(unknown)}; available: "
                              f"{', '.join(known)}")
        chosen = [t for t in ALL_TOOLS if t.name in set(wanted)]
    if read_only:
        chosen = [t for t in chosen if t.name in READ_ONLY_NAMES]
    return chosen


__all__ = [
    "ALL_TOOLS",
    "READ_ONLY_NAMES",
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
