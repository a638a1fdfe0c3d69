"""Checkers: did a task's run produce the expected answer?

Built in: `exact` (the answer, stripped, equals `expected`), `contains` (`expected` occurs in the
answer), `regex` (`expected` matches somewhere in the answer, `re.search`) and `rubric` (the
project's grader, `loopwright.grading`, judges the answer against the task's rubric; only
`satisfied` passes). `expected` may be a list: any item passing is a pass. Anything else is a
Python function named `module:function`, imported once at the start; it gets a `CheckInput` and
returns a bool, a `(bool, detail)` pair or a `Verdict`, and may be async (a sync one runs in a
worker thread, so it may read the workspace).

Every checker a batch names is resolved before the first model call: an unknown name fails the
batch at once with one line.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopwright.batch.tasks import TaskSpec
from loopwright.errors import ConfigError
from loopwright.importing import import_attribute
from loopwright.result import RunResult

BUILTIN_CHECKERS = ("exact", "contains", "regex", "rubric")


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A checker's judgement. `passed` is None when the task has no checker."""

    passed: bool | None
    checker: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "checker": self.checker, "detail": self.detail}


@dataclass(frozen=True, kw_only=True)
class CheckInput:
    """What a `module:function` checker is given."""

    task: TaskSpec
    output: str
    expected: str | tuple[str, ...] | None
    result: RunResult
    workdir: Path


CheckFunction = Callable[[CheckInput], Any]


class CheckerError(ConfigError):
    """A checker that cannot be used: the batch stops before any model call."""


def checker_of(task: TaskSpec, default: str | None) -> str | None:
    """The checker a task uses: its own, the batch's default, `rubric` when it has one, else
    `exact` when it has an expected answer, else none."""
    if task.checker:
        return task.checker
    if task.rubric:
        return "rubric"
    if task.expected is not None:
        return default or "exact"
    return None


def resolve_checkers(tasks: Iterable[TaskSpec], default: str | None = None
                     ) -> dict[str, CheckFunction]:
    """Import every `module:function` checker the tasks name; raises `CheckerError` for a name
    that is neither built in nor importable."""
    if default is not None:
        _check_name(default, "--checker")
    found: dict[str, CheckFunction] = {}
    for task in tasks:
        name = checker_of(task, default)
        if name is None or name in BUILTIN_CHECKERS or name in found:
            continue
        found[name] = _import_checker(name, f"line {task.line}")
    return found


def _check_name(name: str, where: str) -> None:
    if name not in BUILTIN_CHECKERS:
        _import_checker(name, where)


def _import_checker(name: str, where: str) -> CheckFunction:
    if ":" not in name:
        raise CheckerError(f"{where}: unknown checker {name!r}; use one of "
                           f"{', '.join(BUILTIN_CHECKERS)} or a Python function 'module:function'")
    try:
        function = import_attribute(name)
    except ValueError as exc:
        raise CheckerError(f"{where}: checker {name!r}: {exc}") from exc
    if not callable(function):
        raise CheckerError(f"{where}: checker {name!r} is not a function")
    return function  # type: ignore[no-any-return]


async def check(task: TaskSpec, result: RunResult, workdir: Path, *, default: str | None,
                functions: dict[str, CheckFunction]) -> Verdict:
    """Judge one finished run. A checker that raises gives a failed verdict, never a crash."""
    name = checker_of(task, default)
    if name is None:
        return Verdict(passed=None)
    if name == "rubric":
        return _rubric_verdict(result)
    if name in ("exact", "contains", "regex"):
        return _builtin_verdict(name, result.output, task.expected)
    data = CheckInput(task=task, output=result.output, expected=task.expected, result=result,
                      workdir=workdir)
    try:
        return _as_verdict(await _call(functions[name], data), name)
    except Exception as exc:
        return Verdict(passed=False, checker=name,
                       detail=f"the checker raised {type(exc).__name__}: {exc}")


def _builtin_verdict(name: str, output: str, expected: str | tuple[str, ...] | None) -> Verdict:
    options = [expected] if isinstance(expected, str) else list(expected or ())
    tests: dict[str, Callable[[str], bool]] = {
        "exact": lambda want: output.strip() == want.strip(),
        "contains": lambda want: want in output,
        "regex": lambda want: re.search(want, output) is not None,
    }
    passed = any(tests[name](want) for want in options)
    shown = options[0] if len(options) == 1 else options
    detail = "" if passed else f"expected {name} {shown!r}"
    return Verdict(passed=passed, checker=name, detail=detail)


def _rubric_verdict(result: RunResult) -> Verdict:
    grade = result.grade or {}
    verdict = grade.get("verdict")
    if not grade.get("graded"):
        reason = grade.get("error") or "the answer was not graded"
        return Verdict(passed=False, checker="rubric", detail=f"ungraded: {reason}")
    return Verdict(passed=verdict == "satisfied", checker="rubric",
                   detail=f"{verdict}: {grade.get('feedback') or ''}".rstrip(": "))


async def _call(function: CheckFunction, data: CheckInput) -> Any:
    if inspect.iscoroutinefunction(function):
        return await function(data)
    value = await asyncio.to_thread(function, data)
    if inspect.isawaitable(value):
        return await value
    return value


def _as_verdict(value: Any, name: str) -> Verdict:
    if isinstance(value, Verdict):
        return Verdict(passed=value.passed, checker=value.checker or name, detail=value.detail)
    if isinstance(value, bool):
        return Verdict(passed=value, checker=name)
    if (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool)):
        return Verdict(passed=value[0], checker=name, detail=str(value[1]))
    return Verdict(passed=False, checker=name,
                   detail=f"the checker returned {value!r}; expected a bool, (bool, detail) "
                          "or a Verdict")

