"""Ephemeral reminders: short runtime notes attached to the outgoing request, never to history.

Before each model call `ReminderPlugin` collects:

- files changed (or deleted) on disk after the agent read them, each change announced once;
- open todos that have gone quiet (no change for `todo_interval` turns), at most every
  `todo_interval` turns;
- any note added with `add_reminder()` by a hook, a tool or a plugin since the last call.

The notes go out as one `<system-reminder>` user note at the end of the request (merged into a
trailing user message, so roles still alternate; after tool results every adapter sends it in the
same user turn). They are not stored, so the history and the prompt cache stay clean.

State contract, in the per-run tool state (`ToolContext.state` is `RunView.tool_state`):

- `state["read_files"]`: `dict[str, int]`, absolute path → `st_mtime_ns` when the agent
  last read it. File tools fill it with `note_file_read(ctx, path)` after reading a file, and after
  writing or editing one (so the agent's own change is not announced back to it). The reminder
  only reads it: edit tools compare against it to refuse edits to files changed since read.
- `state["todos"]`: `list[dict]` written by the todo tool; each item has `content` (or `text`),
  `status` (`pending` | `in_progress` | `completed` | `cancelled`) and optionally `id`.
- `state["reminders"]`: `list[str]`, pending one-shot notes; use `add_reminder()`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import notes as runtime_notes
from loopwright.messages import ModelRequest, with_user_note
from loopwright.plugins import LoopPlugin
from loopwright.tools.base import ToolContext

if TYPE_CHECKING:
    from loopwright.plugins import RunView

READ_FILES_KEY = "read_files"
TODOS_KEY = "todos"
PENDING_KEY = "reminders"
TODO_INTERVAL = 8
DONE_STATUSES = frozenset({"completed", "done", "cancelled", "canceled"})
MAX_CHANGED_LISTED = 20


def _state_of(target: ToolContext | RunView | dict[str, Any]) -> dict[str, Any]:
    if isinstance(target, dict):
        return target
    if isinstance(target, ToolContext):
        return target.state
    return target.tool_state


def note_file_read(target: ToolContext | RunView | dict[str, Any],
                   path: str | os.PathLike[str]) -> None:
    """Record that the agent has seen `path` as it is now (call after reading or writing it)."""
    state = _state_of(target)
    given = Path(path)
    if isinstance(target, ToolContext) and not given.is_absolute():
        given = Path(target.workdir) / given
    # absolute but not symlink-resolved: the key must be the path the file tools look up
    key = os.path.abspath(given)
    try:
        stamp = os.stat(key).st_mtime_ns
    except OSError:
        return
    state.setdefault(READ_FILES_KEY, {})[key] = stamp


def add_reminder(target: ToolContext | RunView | dict[str, Any], text: str) -> None:
    """Queue a one-shot note for the next model request of this run."""
    if text.strip():
        _state_of(target).setdefault(PENDING_KEY, []).append(text.strip())


def attach_note(request: ModelRequest, text: str) -> None:
    """Append `text` as a user note to the request, keeping roles valid for every wire format."""
    request.messages = with_user_note(request.messages,
                                      f"<system-reminder>\n{text}\n</system-reminder>")


def changed_files(state: dict[str, Any], announced: dict[str, int]) -> list[str]:
    """Notes for files changed or deleted since the agent read them, each change once.

    `read_files` itself is left alone (the edit tools compare against it to refuse stale
    edits); what was already announced is kept in `announced` (path → mtime, -1 if deleted)."""
    seen: dict[str, int] | None = state.get(READ_FILES_KEY)
    notes: list[str] = []
    if not seen:
        return notes
    for path, stamp in list(seen.items()):
        try:
            now = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            now = -1
        except OSError:
            continue
        if now == stamp or announced.get(path) == now:
            continue
        announced[path] = now
        note = runtime_notes.FILE_DELETED if now == -1 else runtime_notes.FILE_CHANGED
        notes.append(runtime_notes.render(note, path=path))
    if len(notes) > MAX_CHANGED_LISTED:
        more = len(notes) - MAX_CHANGED_LISTED
        notes = [*notes[:MAX_CHANGED_LISTED],
                 runtime_notes.render(runtime_notes.MORE_FILES_CHANGED, count=more)]
    return notes


def _todo_text(item: dict[str, Any]) -> str:
    return str(item.get("content") or item.get("text") or item.get("title") or item)


def open_todos(state: dict[str, Any]) -> list[dict[str, Any]]:
    todos = state.get(TODOS_KEY) or []
    return [t for t in todos if isinstance(t, dict)
            and str(t.get("status", "pending")).lower() not in DONE_STATUSES]


class ReminderPlugin(LoopPlugin):
    """Attaches the reminders described in the module docstring to each outgoing request."""

    def __init__(self, *, todo_interval: int = TODO_INTERVAL) -> None:
        self.todo_interval = todo_interval
        # this run's bookkeeping (each run gets its own object from `for_run`)
        self.todo_signature: str | None = None
        self.todos_changed = 0  # the turn the todo list last changed
        self.reminded = 0  # the turn of the last todo reminder
        self.announced: dict[str, int] = {}  # path → mtime announced as changed (-1: deleted)

    def for_run(self, run: RunView) -> LoopPlugin:
        return ReminderPlugin(todo_interval=self.todo_interval)

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        state = run.tool_state
        pending = state.pop(PENDING_KEY, None)
        notes = changed_files(state, self.announced)
        if pending:
            notes[:0] = pending
        todo_note = self._quiet_todos(run)
        if todo_note:
            notes.append(todo_note)
        if notes:
            attach_note(request, "\n".join(notes))

    def _quiet_todos(self, run: RunView) -> str | None:
        todos = run.tool_state.get(TODOS_KEY)
        # most runs keep no list: skip the encoder json.dumps builds for its keyword arguments,
        # and the open items' scan (an empty list has none to remind of)
        signature = json.dumps(todos, sort_keys=True, default=str) if todos else "[]"
        if signature != self.todo_signature:
            self.todo_signature, self.todos_changed = signature, run.turn
            return None
        if not todos:
            return None
        pending = open_todos(run.tool_state)
        quiet = run.turn - self.todos_changed
        if not pending or quiet < self.todo_interval:
            return None
        if run.turn - self.reminded < self.todo_interval:
            return None
        self.reminded = run.turn
        listed = "\n".join(f"- [{t.get('status', 'pending')}] {_todo_text(t)}" for t in pending)
        return runtime_notes.render(runtime_notes.QUIET_TODOS, turns=quiet, listed=listed)
