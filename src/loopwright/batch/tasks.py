"""Batch tasks: one JSON object per line of a tasks file, checked before anything runs.

A line is hostile until checked: every field is type-checked, unknown keys are refused (a typo
such as `expect` would otherwise silently turn a graded task into an ungraded one), file paths
must stay inside the task's workspace, and a regex must compile. A line that fails becomes a
`BadLine` naming its line number; the batch records it as failed and goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

TASK_KEYS = frozenset({
    "id", "prompt", "system_prompt", "model", "tools", "workspace", "files", "expected",
    "checker", "rubric", "max_turns", "metadata",
})
MAX_ID_LENGTH = 200


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """One valid task. `line` is its 1-based line in the tasks file (its position for tasks
    given as dicts)."""

    id: str
    line: int
    prompt: str
    system_prompt: str | None = None
    model: str | None = None
    tools: tuple[str, ...] | None = None  # None: the batch's default tools
    workspace: Path | None = None  # a directory copied for the task
    files: Mapping[str, str] = field(default_factory=dict)  # created in the task's workspace
    expected: str | tuple[str, ...] | None = None
    checker: str | None = None
    rubric: str | None = None
    max_turns: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the inverse of `parse_task`), for sending to other processes."""
        out: dict[str, Any] = {"id": self.id, "prompt": self.prompt}
        for key in ("system_prompt", "model", "checker", "rubric", "max_turns"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.tools is not None:
            out["tools"] = list(self.tools)
        if self.workspace is not None:
            out["workspace"] = str(self.workspace)
        if self.files:
            out["files"] = dict(self.files)
        if self.expected is not None:
            out["expected"] = (self.expected if isinstance(self.expected, str)
                               else list(self.expected))
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


@dataclass(frozen=True, kw_only=True)
class BadLine:
    """A line that is not a valid task: recorded as failed, never run."""

    line: int
    error: str
    id: str | None = None  # when the line had a usable id


class TaskError(ValueError):
    """What is wrong with one task line (the message names the field)."""


def read_tasks(path: Path) -> list[TaskSpec | BadLine]:
    """Every non-blank line of a JSONL tasks file, parsed (blocking: call it off the loop).
    A relative `workspace` is taken from the tasks file's directory."""
    base = path.resolve().parent
    with path.open(encoding="utf-8", errors="replace") as handle:
        return check_unique([_parse_line(text, number, base)
                             for number, text in enumerate(handle, start=1) if text.strip()])


def tasks_from_dicts(items: Iterable[Mapping[str, Any]], *,
                     base: Path | None = None) -> list[TaskSpec | BadLine]:
    """Tasks given as dicts (the Python API); `line` is the 1-based position."""
    root = base or Path.cwd()
    out: list[TaskSpec | BadLine] = []
    for number, item in enumerate(items, start=1):
        try:
            out.append(parse_task(item, line=number, base=root))
        except TaskError as exc:
            out.append(BadLine(line=number, error=f"task {number}: {exc}", id=_loose_id(item)))
    return check_unique(out)


def _parse_line(text: str, number: int, base: Path) -> TaskSpec | BadLine:
    try:
        data = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return BadLine(line=number, error=f"line {number}: not valid JSON ({exc.msg} at column "
                                          f"{exc.colno})")
    except RecursionError:  # arrays or objects nested past the parser's depth: no task's shape
        return BadLine(line=number, error=f"line {number}: not valid JSON (nested deeper than "
                                          "it can be read)")
    try:
        return parse_task(data, line=number, base=base)
    except TaskError as exc:
        return BadLine(line=number, error=f"line {number}: {exc}", id=_loose_id(data))


def parse_task(data: Any, *, line: int, base: Path) -> TaskSpec:
    """One task from its JSON object; raises `TaskError` naming what is wrong."""
    if not isinstance(data, Mapping):
        raise TaskError(f"a task is a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - TASK_KEYS)
    if unknown:
        raise TaskError(f"unknown key(s) {', '.join(map(repr, unknown))}; a task has "
                        f"{', '.join(sorted(TASK_KEYS))} (put anything else in 'metadata')")
    checker = _optional_text(data, "checker")
    expected = _expected(data.get("expected"))
    rubric = _optional_text(data, "rubric")
    if checker in ("exact", "contains", "regex") and expected is None:
        raise TaskError(f"checker {checker!r} needs 'expected'")
    if checker == "regex":
        _compile_all(expected)
    if checker == "rubric" and rubric is None and not isinstance(expected, str):
        raise TaskError("checker 'rubric' needs 'rubric' (or 'expected') holding the rubric text")
    return TaskSpec(
        id=_task_id(data.get("id")),
        line=line,
        prompt=_prompt(data.get("prompt")),
        system_prompt=_optional_text(data, "system_prompt"),
        model=_optional_text(data, "model"),
        tools=_tools(data.get("tools")),
        workspace=_workspace(data.get("workspace"), base),
        files=_files(data.get("files")),
        expected=expected,
        checker=checker,
        rubric=rubric,
        max_turns=_max_turns(data.get("max_turns")),
        metadata=_metadata(data.get("metadata")),
    )


def check_unique(tasks: list[TaskSpec | BadLine]) -> list[TaskSpec | BadLine]:
    """A second task with an id already used becomes a bad line naming the first one's line."""
    first: dict[str, int] = {}
    out: list[TaskSpec | BadLine] = []
    for task in tasks:
        if isinstance(task, TaskSpec):
            if task.id in first:
                out.append(BadLine(line=task.line, error=f"line {task.line}: duplicate id "
                                   f"{task.id!r} (first on line {first[task.id]})"))
                continue
            first[task.id] = task.line
        out.append(task)
    return out


def _task_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TaskError("'id' must be a string or an integer"
                        + (" (it is missing)" if value is None else ""))
    text = str(value)
    if not text.strip() or len(text) > MAX_ID_LENGTH or any(ord(c) < 32 for c in text):
        raise TaskError(f"'id' must be 1-{MAX_ID_LENGTH} printable characters")
    return text


def _prompt(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TaskError("'prompt' must be a non-empty string")
    return value


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"{key!r} must be a non-empty string")
    return value


def _expected(value: Any) -> str | tuple[str, ...] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TaskError("'expected' must be a string, a number or a non-empty list of strings "
                    "(any of them passes)")


def _compile_all(expected: str | tuple[str, ...] | None) -> None:
    for pattern in ([expected] if isinstance(expected, str) else expected or ()):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TaskError(f"'expected' is not a valid regular expression ({exc})") from exc


def _tools(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TaskError("'tools' must be a list of tool names")
    return tuple(value)


def _workspace(value: Any, base: Path) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TaskError("'workspace' must be a directory path")
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_dir():
        raise TaskError(f"workspace {value!r} is not a directory ({path})")
    return path


def _files(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TaskError("'files' must be an object of relative path → text")
    out: dict[str, str] = {}
    for name, text in value.items():
        if not isinstance(text, str):
            raise TaskError(f"files[{name!r}] must be a string")
        parts = PurePosixPath(name).parts
        if not parts or name.startswith(("/", "\\")) or ".." in parts or "\0" in name:
            raise TaskError(f"files[{name!r}]: give a relative path inside the workspace")
        out[name] = text
    return out


def _max_turns(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TaskError("'max_turns' must be a positive integer")
    return value


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TaskError("'metadata' must be an object")
    return dict(value)


def _loose_id(data: Any) -> str | None:
    """The id of an invalid task, when it has a usable one (so a resume can skip it)."""
    if isinstance(data, Mapping):
        try:
            return _task_id(data.get("id"))
        except TaskError:
            return None
    return None
