"""What a tool may ask of the run that called it: `ToolContext`, injected into the parameter
annotated with it, and the narrow view of the run (`CallingRun`) it holds."""

from __future__ import annotations

import asyncio
import time
import typing
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from loopwright.messages import Message, Usage

if TYPE_CHECKING:
    from loopwright.budget import IterationBudget
    from loopwright.events import Event, StatusKind

ApprovalGate = Callable[[str, str], Awaitable[bool]]
StatusEmitter = Callable[["StatusKind", str, dict[str, Any]], None]
EffectRecorder = Callable[[dict[str, Any]], Awaitable[None]]
ChangePreview = Callable[[dict[str, Any], "ToolContext[Any]"], Awaitable[str]]
"""`(arguments, ctx) -> diff`: what a file-changing call would change, as a unified diff ("" if
unknown), shown when the call waits for the user's approval."""


async def _deny_all(action: str, detail: str) -> bool:
    return False


DepsT = TypeVar("DepsT", default=Any)


@dataclass(frozen=True, slots=True)
class CallingRun:
    """What a tool may see of the run that called it (`ToolContext.run`), and no more: a
    sub-agent shares the run's budget, its events and its usage, and works in the run's
    directory as the run does (`project`: whether that directory is a project, as the run was
    told: `Agent.run(project=)`); a tool reads the history (live, not to be changed)."""

    agent_tag: str
    session_id: str | None
    budget: IterationBudget
    history: Sequence[Message]
    emit: Callable[[Event], None]
    charge: Callable[[Usage, float | None], None]
    project: bool = True


@dataclass(kw_only=True)
class ToolContext(Generic[DepsT]):
    """What a tool may ask of the run that called it; injected into a `ctx: ToolContext` param.
    `deps` is what `Agent.run(..., deps=)` was given: annotate `ctx: ToolContext[MyDeps]` and
    `ctx.deps` is typed."""

    deps: DepsT = field(default=typing.cast(Any, None))

    workdir: Path = field(default_factory=Path.cwd)
    session_id: str | None = None
    run_id: str = ""
    call_id: str = ""
    # the same for a call the model makes again after a crash cut it off (tools/idempotency.py):
    # a tool with a side effect records it with the effect and skips an effect it already holds
    idempotency_key: str = ""
    # makes a record of what the call is about to change durable first (the session recorder
    # sets it on calls that are not read-only; tools/effects.py); None without a session store
    record_effect: EffectRecorder | None = None
    approve: ApprovalGate = _deny_all
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    state: dict[str, Any] = field(default_factory=dict)  # per-run tool state (todos, read stamps…)
    emit_status: StatusEmitter | None = None
    services: dict[str, Any] = field(default_factory=dict)  # agent, store, memory… by name
    run: CallingRun | None = None  # None outside a run (a tool called directly)
    approval_wait: float = 0.0  # seconds this call spent waiting for the user's approval

    def __post_init__(self) -> None:
        # the wrapper reaches this context weakly: a strong reference would make the two a
        # cycle, left for the garbage collector by every tool call (its collections are CPU
        # a turn; a context is otherwise freed as soon as the call is over)
        gate, context = self.approve, weakref.ref(self)

        async def timed(action: str, detail: str) -> bool:
            started = time.perf_counter()
            try:
                return await gate(action, detail)
            finally:  # the human's time is no tool time
                ctx = context()
                if ctx is not None:
                    ctx.approval_wait += time.perf_counter() - started

        self.approve = timed

    def status(self, kind: StatusKind, message: str, **data: Any) -> None:
        if self.emit_status is not None:
            self.emit_status(kind, message, data)
