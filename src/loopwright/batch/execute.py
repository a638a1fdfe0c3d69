"""Running one task: its workspace, its agent, its run, its verdict — the same code in the local
batch and inside each Ray worker.

One `TaskRunner` lives on one event loop and serves many tasks at once. What its tasks share is
built once: the checkers, the session store (one connection, not one per task), the HTTP client,
each model's context window (probed once per model, not once per task) and the agents: tasks
that ask for the same model, system prompt, turn limit, tools and rubric share one `Agent`, each
run in its own workspace (`Agent.run(workdir=)`); building an agent per task cost about as much
CPU as a one-turn run. A task that brings a project (a `workspace` to copy, or skills among its
`files`) still gets an agent of its own, made in its workspace, for that project's skills.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from loopwright.batch.checkers import (
    BUILTIN_CHECKERS,
    CheckFunction,
    check,
    checker_of,
    resolve_checkers,
)
from loopwright.batch.results import ResultRow, failed_row
from loopwright.batch.tasks import TaskSpec
from loopwright.batch.trajectories import trajectory
from loopwright.batch.workspace import (
    prepare_workspace,
    remove_workspace,
    shared_empty_workdir,
    temporary_root,
)
from loopwright.errors import ConfigError
from loopwright.importing import import_attribute

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.result import RunResult
    from loopwright.store import SessionStore
    from loopwright.tools.base import Tool


@dataclass(kw_only=True)
class BatchConfig:
    """What every task of a batch shares. Plain data, so it can travel to Ray workers."""

    agent_options: dict[str, Any] = field(default_factory=dict)  # `Agent` keyword arguments
    tools: list[Any] | None = None  # default toolset: Tool objects or built-in names
    default_checker: str | None = None
    trajectories: str | None = None  # a `TRAJECTORY_FORMATS` name
    interventions: str = "mark"  # the runtime's notes and set-aside replies: "mark" or "drop"
    # where task workspaces are made and kept; None: a temporary directory per runner, each
    # workspace removed when its task ends. Never under the output directory by default: the
    # agent reads instruction files (AGENTS.md, …) from its working directory's parents, and a
    # batch started inside a project must not hand that project's to every task.
    workspace_root: Path | None = None


@dataclass(kw_only=True)
class TaskOutcome:
    row: ResultRow
    trajectory: dict[str, Any] | None = None


class TaskRunner:
    """Runs tasks of one batch on the current event loop (see the module docstring)."""

    def __init__(self, config: BatchConfig, tasks: Iterable[TaskSpec] = ()) -> None:
        """`tasks`: the batch's tasks, whose checkers are imported now (an unknown one raises
        `CheckerError`); a checker first named later (a Ray worker's tasks) is imported then."""
        self.config = config
        self.checkers: dict[str, CheckFunction] = resolve_checkers(tasks, config.default_checker)
        self.default_tools = _default_toolset(config.tools)
        self._windows: dict[str | None, asyncio.Future[int | None]] = {}
        self._agents: dict[tuple[Any, ...], asyncio.Future[Agent]] = {}
        self._store: SessionStore | None = None
        self._opened: asyncio.Future[None] | None = None
        self._root: Path | None = config.workspace_root
        self._empty: Path | None = None  # the workdir of tasks that touch no files
        self._keep = config.workspace_root is not None

    async def prepare(self, models: Iterable[str | None]) -> None:
        """Open the store and resolve each model (a broken configuration fails here, before any
        model call). Runs by itself before the first task when not called."""
        if self._opened is None:
            self._opened = asyncio.ensure_future(self._open())
        await _shared(self._opened)  # raises what opening the store raised
        if models:
            await asyncio.gather(*(self._window(model) for model in set(models)))

    async def _open(self) -> None:
        from loopwright.endpoints.base import hold_shared_client
        from loopwright.store import open_store

        hold_shared_client(self)  # one HTTP client for the whole batch, not one per task
        spec = self.config.agent_options.get("store")
        data_dir = self.config.agent_options.get("data_dir")
        self._store = await asyncio.to_thread(open_store, spec, data_dir=data_dir)
        if self._root is None:
            self._root = await asyncio.to_thread(temporary_root)
            self._empty = await asyncio.to_thread(shared_empty_workdir, self._root)

    async def aclose(self) -> None:
        from loopwright.endpoints.base import release_shared_client

        agents, self._agents = list(self._agents.values()), {}
        for pending in agents:
            if pending.done() and pending.exception() is None:
                await pending.result().aclose()
        if self._store is not None:
            await self._store.aclose()
            self._store = None
        if self._root is not None and not self._keep:
            await asyncio.to_thread(remove_workspace, self._root)
            self._root = None
        await release_shared_client(self)

    async def run(self, task: TaskSpec) -> TaskOutcome:
        """One task to the end. Never raises for the task's own failures (a workspace or an
        agent that cannot be made, a checker or tool that breaks): they become a `failed` row."""
        started = time.monotonic()
        own = _brings_project(task)
        made: Path | None = None  # a workspace of this task's own, removed when it ends
        try:
            await self.prepare(())
            self._import_checker(task)
            window = await self._window(task.model)
            if own:
                made = await asyncio.to_thread(self._workspace, task)
            agent = await self._agent(task, window, made)
            workdir = made or self._shared_workdir(task, agent)
            if workdir is None:
                workdir = made = await asyncio.to_thread(self._workspace, task)
        except Exception as exc:
            await self._remove(made)
            return TaskOutcome(row=failed_row(id=task.id, line=task.line, error=_describe(exc)))
        try:
            # the shared empty directory is the batch's, not a project, nor is what lies above
            # it ($TMPDIR, /): no instruction file found up there is a task's (and no walk)
            result = await agent.run(task.prompt, workdir=workdir, project=workdir != self._empty,
                                     raise_on_error=False)  # a failed task is a row
            verdict = await check(task, result, workdir, default=self.config.default_checker,
                                  functions=self.checkers)
            row = _row(task, result, verdict.to_dict(), time.monotonic() - started)
            return TaskOutcome(row=row, trajectory=self._trajectory(task, agent, result, row))
        except Exception as exc:  # this task fails, the batch goes on
            return TaskOutcome(row=failed_row(id=task.id, line=task.line, error=_describe(exc)))
        finally:
            if own:
                await agent.aclose()
            await self._remove(made)

    # -- building blocks --

    def _import_checker(self, task: TaskSpec) -> None:
        name = checker_of(task, self.config.default_checker)
        if name is not None and name not in BUILTIN_CHECKERS and name not in self.checkers:
            self.checkers.update(resolve_checkers([task], self.config.default_checker))

    def _workspace(self, task: TaskSpec) -> Path:
        """Blocking (disk): the task's workspace."""
        assert self._root is not None  # made by prepare()
        return prepare_workspace(task, self._root)

    def _shared_workdir(self, task: TaskSpec, agent: Agent) -> Path | None:
        """The batch's one empty, read-only directory for a task that cannot touch a workspace
        (no files, no tools, no hooks, a checker that reads only the answer), else None: making
        and removing a directory per such task, each on a worker thread, was a third of the
        batch's own CPU per task. Workspaces the user asked to keep are always made."""
        if self._keep or self._empty is None or task.workspace is not None or task.files:
            return None
        settings = agent.settings
        if len(agent.registry) or settings.mcp_servers or settings.hooks:
            return None
        checker = checker_of(task, self.config.default_checker)
        if checker is not None and checker not in BUILTIN_CHECKERS:  # a function may read files
            return None
        return self._empty

    async def _remove(self, workdir: Path | None) -> None:
        if workdir is not None and not self._keep:
            await asyncio.to_thread(remove_workspace, workdir)

    async def _agent(self, task: TaskSpec, window: int | None, own: Path | None) -> Agent:
        """The agent for tasks shaped like this one, built (in a worker thread: it reads config
        files) by the first of them; a failure to build fails each task that asks. `own`: the
        workspace of a task that brings a project, which gets an agent of its own made there
        (its skills, as far as the project is trusted)."""
        tools = self._tools(task)
        rubric = self._rubric(task)
        trusted = None
        if task.workspace is not None and not self.config.agent_options.get(
                "trust_project_files"):
            from loopwright.trust import prompt_content_trusted

            # the copy is as trusted as the directory it was made from (`loopwright trust`)
            trusted = await asyncio.to_thread(prompt_content_trusted, task.workspace)
        key = (task.model, task.system_prompt, task.max_turns, rubric, trusted,
               tuple(t.name for t in tools))
        pending = None if own is not None else self._agents.get(key)
        if pending is not None and pending.done() and pending.exception() is None:
            return pending.result()  # the common case: built by an earlier task
        options = self._agent_options(task, window, rubric)
        if trusted is not None:
            options["trust_project_files"] = trusted
        if own is not None:
            options["workdir"] = str(own)
            return await asyncio.to_thread(self._build_agent, tools, options)
        if pending is None or pending.done():  # none yet, or the last attempt failed
            pending = self._agents[key] = asyncio.ensure_future(
                asyncio.to_thread(self._build_agent, tools, options))
        return await _shared(pending)

    @staticmethod
    def _build_agent(tools: list[Tool], options: dict[str, Any]) -> Agent:
        from loopwright.agent import Agent

        return Agent(tools=tools, **options)

    def _agent_options(self, task: TaskSpec, window: int | None,
                       rubric: str | tuple[str, ...] | None) -> dict[str, Any]:
        options = dict(self.config.agent_options)
        options["store"] = self._store
        # each run has its task's workspace; the agent's own (skills, memory) is their parent,
        # not the directory the batch was started in
        options["workdir"] = str(self._root)
        if window is not None and not options.get("context_window"):
            options["context_window"] = window
        for key in ("model", "system_prompt", "max_turns"):
            if getattr(task, key) is not None:
                options[key] = getattr(task, key)
        if rubric is not None:
            # the grader judges once; a revision round would make it part of the run
            options["rubric"] = rubric
            options["max_rubric_rounds"] = 0
        return options

    def _rubric(self, task: TaskSpec) -> str | tuple[str, ...] | None:
        if checker_of(task, self.config.default_checker) != "rubric":
            return None
        return task.rubric or task.expected

    def _tools(self, task: TaskSpec) -> list[Tool]:
        if task.tools is None:
            return list(self.default_tools.values())
        return [self.default_tools.get(name) or _named_tool(name) for name in task.tools]

    async def _window(self, model: str | None) -> int | None:
        """The context window of `model` (None: the batch's), found once per model. The first
        task of a model waits for the probe; the others reuse its answer."""
        pending = self._windows.get(model)
        if pending is None:
            pending = asyncio.ensure_future(self._probe_window(model))
            self._windows[model] = pending
        return await _shared(pending)

    async def _probe_window(self, model: str | None) -> int | None:
        if self.config.agent_options.get("context_window"):
            return None  # given: nothing to probe
        from loopwright.agent import Agent

        options = {key: value for key, value in self.config.agent_options.items()
                   if key not in ("store", "rubric", "mcp_servers")}
        if model is not None:
            options["model"] = model
        def build() -> Agent[Any, Any]:
            return Agent(**options)

        agent = await asyncio.to_thread(build)  # reads config files
        try:
            windows = await agent.context_windows()
        finally:
            await agent.aclose()
        return windows[0].tokens if windows else None

    def _trajectory(self, task: TaskSpec, agent: Agent, result: RunResult,
                    row: ResultRow) -> dict[str, Any] | None:
        if self.config.trajectories is None:
            return None
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                 for t in agent.registry]
        meta = {"stop_reason": row.stop_reason, "solved": row.solved, "verdict": row.verdict,
                "session_id": row.session_id, "metadata": dict(task.metadata)}
        return trajectory(self.config.trajectories, task_id=task.id, history=result.messages,
                          tools=tools, meta=meta, interventions=self.config.interventions)


def _brings_project(task: TaskSpec) -> bool:
    """A task copied from a project, or whose files hold skills, may find skills in its own
    workspace: its agent is made there, not shared."""
    from loopwright.skills.discovery import PROJECT_DIRS

    return task.workspace is not None or any(
        Path(name).as_posix().startswith(tuple(d + "/" for d in PROJECT_DIRS))
        for name in task.files)


def check_tools(tasks: Iterable[TaskSpec], config: BatchConfig) -> None:
    """Every tool a task names exists (built in, in the batch's toolset, or `module:attribute`);
    raises `ConfigError` naming the first line that names one that does not."""
    known = _default_toolset(config.tools)
    seen: set[str] = set(known)
    for task in tasks:
        for name in task.tools or ():
            if name in seen:
                continue
            try:
                _named_tool(name)
            except ConfigError as exc:
                raise ConfigError(f"line {task.line}: {exc}") from None
            seen.add(name)


def _default_toolset(tools: list[Any] | None) -> dict[str, Tool]:
    """The batch's toolset by name: built-in or `module:attribute` names, Tool objects, or plain
    functions (made tools)."""
    out: dict[str, Tool] = {}
    for item in tools or ():
        found = _named_tool(item) if isinstance(item, str) else _as_tool(item)
        out[found.name] = found
    return out


def _as_tool(value: Any) -> Tool:
    from loopwright.tools.base import Tool, tool

    return value if isinstance(value, Tool) else tool(value)


def _named_tool(name: str) -> Tool:
    """A built-in tool by name, or a `module:attribute` Tool (or plain function)."""
    from loopwright.builtin import TOOL_NAMES, default_tools

    if name in TOOL_NAMES:
        return default_tools(names=[name])[0]
    if ":" not in name:
        raise ConfigError(f"unknown tool {name!r}; use a built-in ({', '.join(TOOL_NAMES)}) "
                          "or a Python tool as 'module:attribute'")
    try:
        found = import_attribute(name)
    except ValueError as exc:
        raise ConfigError(f"tool {name!r} cannot be imported: {exc}") from exc
    return _as_tool(found)


def _describe(exc: Exception) -> str:
    if isinstance(exc, OSError | ConfigError):
        return str(exc)  # already says what and where
    return f"{type(exc).__name__}: {exc}"


def _row(task: TaskSpec, result: RunResult, verdict: Mapping[str, Any], wall: float
         ) -> ResultRow:
    failed = result.stop_reason == "error"
    passed = verdict.get("passed")
    return ResultRow(
        id=task.id, line=task.line, status="failed" if failed else "done",
        solved=bool(passed) if passed is not None else result.stop_reason == "completed",
        stop_reason=result.stop_reason, verdict=dict(verdict), turns=result.turns,
        usage=result.usage.to_dict(), tokens=result.usage.total_tokens, cost=result.cost,
        wall=wall, session_id=result.session_id, error=result.error, output=result.output,
    )


T = TypeVar("T")


async def _shared(future: asyncio.Future[T]) -> T:
    """The result of work every task waits on (the store's opening, an agent, a window), a
    cancel of one task not reaching it; once done, without a shield (a future and two
    callbacks, on every task)."""
    return future.result() if future.done() else await asyncio.shield(future)
