"""loopwright's events and stored messages as ACP session updates.

A tool call becomes `tool_call` (with its kind, the paths it touches as locations and, for a file
change, the diff it makes) and then `tool_call_update` (completed or failed, with the result);
the `todo` list becomes the session's plan; text and reasoning stream as message and thought
chunks. The same mapping replays a stored session for `session/load`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import helpers
from acp.schema import (
    AgentPlanUpdate,
    PlanEntry,
    PlanEntryStatus,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
)

from loopwright.messages import Message, ToolCall

ToolUpdate = ToolCallStart | ToolCallProgress

RESULT_CHARS = 8_000  # of a tool's result shown in the editor; the model saw it whole
FILE_CHARS = 1_000_000  # a file larger than this is not diffed in the editor

_KINDS: dict[str, ToolKind] = {
    "read_file": "read", "list_dir": "read", "write_file": "edit", "edit_file": "edit",
    "apply_patch": "edit", "glob": "search", "grep": "search", "tool_search": "search",
    "bash": "execute", "web_fetch": "fetch", "todo": "think", "clarify": "think",
    "delegate": "think",
}
EDIT_TOOLS = frozenset({"write_file", "edit_file", "apply_patch"})
_PLAN_STATUS: dict[str, PlanEntryStatus] = {"pending": "pending", "in_progress": "in_progress",
                                             "done": "completed"}


def tool_kind(name: str) -> ToolKind:
    return _KINDS.get(name, "other")


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """What a file tool call will change: the file's text before and after."""

    path: Path
    old_text: str | None
    new_text: str


def tool_title(name: str, arguments: Mapping[str, Any]) -> str:
    """One line naming the call, as an editor lists it: `bash: pytest -q`, `edit_file: a.py`."""
    for key in ("command", "path", "pattern", "url", "query", "task"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            first = value.strip().splitlines()[0]
            return f"{name}: {first[:120]}"
    return name


def locations(workdir: Path, name: str, arguments: Mapping[str, Any]) -> list[ToolCallLocation]:
    """The files a call names, as absolute paths inside the working directory."""
    from loopwright.safety.policy import path_subjects

    found: list[ToolCallLocation] = []
    for subject in path_subjects(workdir, arguments):
        if subject.startswith("/") and subject not in {loc.path for loc in found}:
            found.append(ToolCallLocation(path=subject))
    return found


def call_started(call_id: str, name: str, arguments: Mapping[str, Any] | str, workdir: Path,
                 change: FileChange | None = None) -> ToolCallStart:
    args = arguments if isinstance(arguments, Mapping) else {}
    content = [helpers.tool_diff_content(str(change.path), change.new_text, change.old_text)
               ] if change is not None else None
    return helpers.start_tool_call(
        call_id, tool_title(name, args), kind=tool_kind(name), status="pending",
        content=content, locations=locations(workdir, name, args) or None,
        raw_input=args if args else arguments)


def call_finished(call_id: str, content: str, *, is_error: bool,
                  change: FileChange | None = None) -> ToolCallProgress:
    shown = content if len(content) <= RESULT_CHARS else (
        content[:RESULT_CHARS] + f"\n… ({len(content) - RESULT_CHARS:,} more characters)")
    parts: list[Any] = []
    if change is not None and not is_error:
        parts.append(helpers.tool_diff_content(str(change.path), change.new_text,
                                               change.old_text))
    parts.append(helpers.tool_content(helpers.text_block(shown)))
    return helpers.update_tool_call(call_id, status="failed" if is_error else "completed",
                                    content=parts, raw_output=shown)


def plan_from_todos(arguments: Mapping[str, Any] | str) -> AgentPlanUpdate | None:
    """The `todo` tool's list as the session's plan (None if the call carried no list)."""
    items = arguments.get("todos") if isinstance(arguments, Mapping) else None
    if not isinstance(items, list):
        return None
    entries = [PlanEntry(content=str(item.get("content", "")), priority="medium",
                         status=_PLAN_STATUS.get(str(item.get("status")), "pending"))
               for item in items if isinstance(item, Mapping)]
    return helpers.update_plan(entries)


def proposed_change(workdir: Path, name: str, arguments: Mapping[str, Any] | str,
                    current: str | None) -> FileChange | None:
    """The change a `write_file` or `edit_file` call would make to a file whose text is
    `current` (None: it does not exist); None when it cannot be told (patches, bad input)."""
    from loopwright.builtin.files import edited_text
    from loopwright.errors import ToolError

    if not isinstance(arguments, Mapping) or not isinstance(arguments.get("path"), str):
        return None
    path = (workdir / str(arguments["path"])).resolve()
    if name == "write_file" and isinstance(arguments.get("content"), str):
        return FileChange(path=path, old_text=current, new_text=str(arguments["content"]))
    if name == "edit_file" and current is not None:
        try:
            new_text = edited_text(str(path), current, str(arguments.get("old_string", "")),
                                   str(arguments.get("new_string", "")),
                                   bool(arguments.get("replace_all")))[0]
        except ToolError:
            return None  # the edit will fail and say why
        return FileChange(path=path, old_text=current, new_text=new_text)
    return None


def history_updates(history: Iterable[Message], workdir: Path) -> list[Any]:
    """A stored conversation as the updates that replay it (`session/load`)."""
    out: list[Any] = []
    for message in history:
        if message.role == "user" and message.content:
            out.append(helpers.update_user_message_text(message.content))
        elif message.role == "assistant":
            if message.reasoning:
                out.append(helpers.update_agent_thought_text(message.reasoning))
            if message.content:
                out.append(helpers.update_agent_message_text(message.content))
            out.extend(_replayed_call(call, workdir) for call in message.tool_calls)
        elif message.role == "tool" and message.tool_call_id:
            out.append(call_finished(message.tool_call_id, message.content,
                                     is_error=message.is_error))
    return out


def _replayed_call(call: ToolCall, workdir: Path) -> ToolCallStart:
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = call.arguments
    return call_started(call.id, call.name, arguments, workdir)
