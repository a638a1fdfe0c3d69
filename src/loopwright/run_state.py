"""The run's state: `LoopSettings` (what one run needs from its agent, fixed for the run),
`RunState` (one run's mutable state; plugins see it as a `plugins.RunView`) and the tagged outcome
of one turn (`RunAgain`, `Answer`, `Stop`). Kept apart from `loop.py`, which holds the steps: each
step of the loop reads and changes one `RunState`, so the state has its home here and the steps
theirs there."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import messages, notes
from loopwright.budget import IterationBudget
from loopwright.endpoints.fallback import ProviderChain
from loopwright.events import Event, StatusEvent, StatusKind
from loopwright.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage
from loopwright.model_call import ModelCalls
from loopwright.plugins import LoopPlugin
from loopwright.result import StopReason
from loopwright.review.stage import ReviewPlan, ReviewStage
from loopwright.tools.base import ApprovalGate, CallingRun, ToolContext
from loopwright.tools.context import _deny_all
from loopwright.tools.execute import ToolExecutor
from loopwright.tools.idempotency import IdempotencyKeys

if TYPE_CHECKING:
    from loopwright.routing.choose import RouteFunction  # a type: routing loads when used


@dataclass(kw_only=True)
class LoopSettings:
    """What one run needs from its agent; fixed for the run. The defaults of the numbers are
    `settings.Settings`'s: `Agent` always passes them."""

    chain: ProviderChain
    executor: ToolExecutor
    plugins: list[LoopPlugin] = field(default_factory=list)
    max_turns: int
    stream: bool
    max_tokens: int | None
    temperature: float | None
    reasoning_effort: str | None
    max_auto_continues: int
    workdir: Path
    project: bool = True  # whether `workdir` is a project (`Agent.start(project=)`)
    approve: ApprovalGate = _deny_all
    tool_specs: Callable[[int], list[ToolSpec]] | None = None  # by turn number
    services: dict[str, Any] = field(default_factory=dict)
    side_chains: dict[str, ProviderChain] = field(default_factory=dict)  # by call purpose
    route: RouteFunction | None = None  # the choose_model hook
    review: ReviewPlan = field(default_factory=ReviewPlan)  # the checks of the model's replies


# --- the tagged outcome of one turn -------------------------------------------------------------


@dataclass(frozen=True)
class RunAgain:
    pass


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass(frozen=True)
class Stop:
    reason: StopReason
    error: str | None = None
    output: str | None = None


Next = RunAgain | Answer | Stop


_HOOKS = ("on_message", "before_model", "text_filter", "on_tool_args", "after_model",
          "on_results", "after_tools")
# by plugin class: the hooks it overrides, looked up once per class (a class is not given new
# hooks after its first run). Plugins are made for every run (`for_run`) from a few classes;
# looking each hook up on each class again cost ~700 bytecodes a run
_class_hooks: dict[type, frozenset[str]] = {}
_CLASSES_KEPT = 256


class PluginHooks:
    """For each hook the loop calls on every turn, the run's plugins that override it, in list
    order: a plugin's no-op default is not called (each is a call, an async one a coroutine,
    per plugin per turn). A hook set on the object itself counts as overriding."""

    def __init__(self, plugins: list[LoopPlugin]) -> None:
        by_hook: dict[str, list[LoopPlugin]] = {hook: [] for hook in _HOOKS}
        for plugin in plugins:
            hooks = _class_hooks.get(type(plugin))
            if hooks is None:
                if len(_class_hooks) >= _CLASSES_KEPT:  # classes made on the fly: bounded
                    _class_hooks.clear()
                hooks = _class_hooks[type(plugin)] = _overridden(type(plugin))
            own = getattr(plugin, "__dict__", None)
            if own:  # a hook set on the object itself
                hooks = hooks.union(own.keys() & by_hook.keys())
            for hook in hooks:
                by_hook[hook].append(plugin)
        self.on_message = by_hook["on_message"]
        self.before_model = by_hook["before_model"]
        self.text_filter = by_hook["text_filter"]
        self.on_tool_args = by_hook["on_tool_args"]
        self.after_model = by_hook["after_model"]
        self.on_results = by_hook["on_results"]
        self.after_tools = by_hook["after_tools"]


def _overridden(cls: type) -> frozenset[str]:
    return frozenset(hook for hook in _HOOKS
                     if getattr(cls, hook, default := getattr(LoopPlugin, hook)) is not default)


class RunState:
    """One run's mutable state; plugins see it as a `plugins.RunView`. Thread-safe entry
    points: `steer()` and `cancel()`."""

    def __init__(self, *, settings: LoopSettings, history: list[Message],
                 emit: Callable[[Event], None], budget: IterationBudget,
                 session_id: str | None = None, agent_tag: str = "",
                 listeners: Sized | None = None) -> None:
        self.settings = settings
        self.history = history
        # the callbacks' fan-out itself, not a method around it: a call fewer on every event
        self.emit: Callable[[Event], None] = emit
        # what `emit` fans out to, read when asked (None: someone always listens): the loop
        # builds the events only it makes (a turn's start and end, a call's record, a tool
        # call and result) only when they reach someone
        self._listeners = listeners
        self.budget = budget
        self.session_id = session_id
        self.agent_tag = agent_tag
        self.deps: Any = None  # `run(..., deps=)`, handed to tools as `ctx.deps`
        self.run_id = os.urandom(16).hex()  # a URL capability in `serve`: 128 random bits
        self.turn = 0
        self.calls = ModelCalls(self, settings.chain, stream=settings.stream,
                                side=settings.side_chains, route=settings.route)
        self.review = ReviewStage(settings.review)
        self.reply_raw = ""  # the last reply's text as the model wrote it (`review.ReviewView`)
        self.offered: list[ToolSpec] = []  # the tools offered this turn (step 7)
        # the last offered tools' names and schemas by name (`tool_schemas`)
        self._schemas: tuple[list[ToolSpec], frozenset[str], dict[str, dict[str, Any]]] | None \
            = None
        self.tools_off = False  # the last request asked for an answer without tools
        self.reply_unreadable: list[str] = []  # its unreadable call markup (`ModelResponse`)
        self.sanitizer = messages.Sanitizer()
        self.output_parts: list[str] = []
        self.answer_messages: list[Message] = []  # the replies (and continue notes) of the answer
        self.last_reply: Message | None = None  # this run's, never an earlier run's answer
        self.auto_continues = 0
        self.tool_state: dict[str, Any] = {}
        self._calling: CallingRun | None = None  # what tools see of this run (`tool_context`)
        self.answer_now = False  # the next request goes without tools: the model has its results
        self.answer_note = ""  # the note that asks for it, when a check wrote its own
        self.prefill = ""  # the next reply is begun with this for the model (a call's opening)
        self._any_set_aside = False  # a reply was set aside (`Message.marks`) in this run
        self.turns_apart = True  # see `request_history`
        self.request = ""  # the user's request: the last user message when the run began
        self._start_failure: Exception | None = None
        self._keys: IdempotencyKeys | None = None  # made when the first tool runs
        self.cancelled = asyncio.Event()
        self._steering: deque[str] = deque()
        self._cancel_requested = False
        # the run's task while it awaits something `cancel()` may abort (`interruptible`)
        self._inflight: asyncio.Task[Any] | None = None
        self._aborted: asyncio.Task[Any] | None = None  # cancelled by `_abort_inflight`
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.plugins: list[LoopPlugin] = []
        for plugin in settings.plugins:  # 1
            try:
                self.plugins.append(plugin.for_run(self))
            except Exception as exc:  # fails the run when it starts, with an error event
                self._start_failure = self._start_failure or exc
        self.hooks = PluginHooks(self.plugins)

    def tool_schemas(self, specs: list[ToolSpec]
                     ) -> tuple[frozenset[str], dict[str, dict[str, Any]]]:
        """The names of `specs` and their parameter schemas by name, made again only when the
        tools differ from the last ones asked about (a turn offers the same spec objects as
        the last one: the list is compared at C speed, element by identity first)."""
        kept = self._schemas
        if kept is None or kept[0] != specs:
            schemas = {spec.name: spec.parameters for spec in specs}
            kept = self._schemas = (list(specs), frozenset(schemas), schemas)
        return kept[1], kept[2]

    # -- thread-safe controls --

    def steer(self, text: str) -> None:
        with self._lock:
            self._steering.append(text)

    def cancel(self) -> None:
        self._cancel_requested = True
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._abort_inflight()
        else:
            loop.call_soon_threadsafe(self._abort_inflight)

    def _abort_inflight(self) -> None:
        self.cancelled.set()
        task = self._inflight
        if task is not None and task is not self._aborted and not task.done():
            self._aborted = task
            task.cancel()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_requested

    @property
    def steering_pending(self) -> bool:
        return bool(self._steering)

    def drain_steering(self) -> list[str]:
        with self._lock:
            items = list(self._steering)
            self._steering.clear()
        return items

    # -- the plugin view (`plugins.RunView`) --

    @property
    def usage(self) -> Usage:
        return self.calls.usage

    @property
    def cost(self) -> float | None:
        return self.calls.cost.total

    @property
    def model(self) -> str:
        return self.calls.model

    async def call_opening(self) -> str:
        """How a native call begins for the model now answering, when its server continues a
        reply begun for it ("" otherwise): `ModelClient.call_opening`."""
        return await self.settings.chain.current.call_opening()

    @property
    def listened(self) -> bool:
        """Whether an event emitted now reaches a callback."""
        listeners = self._listeners
        return listeners is None or len(listeners) > 0

    def append(self, message: Message) -> None:
        self.history.append(message)
        if message.role == "assistant":
            self.last_reply = message
        for plugin in self.hooks.on_message:  # 2
            plugin.on_message(self, message)

    def set_aside_answer(self) -> None:
        """Leave the last answer out of later requests: every part of it, when it was cut by
        the output limit and continued, with the notes that asked to continue (its cut first
        part left in view, the 0.5B wrote the same description again)."""
        for message in self.answer_messages:  # the mark stays through a history repair
            notes.mark_set_aside(message)
            self._any_set_aside = True

    def request_history(self) -> list[Message]:
        """The history a request is built from, sanitised: without the replies set aside, and
        the user message that follows one kept as a turn of its own (merged into the request
        before it, the feedback was ignored: the 0.5B answered the request again) — unless the
        provider rejected that shape (some chat templates require strict alternation)."""
        if not self._any_set_aside:
            return self.sanitizer(self.history)
        kept: list[Message] = []
        apart: set[int] = set()
        after_gap = False
        for message in self.history:
            if notes.is_set_aside(message):
                after_gap = True
                continue
            if after_gap and message.role == "user" and self.turns_apart:
                apart.add(id(message))
            after_gap = False
            kept.append(message)
        return self.sanitizer(kept, apart)

    def merge_turns(self) -> None:
        """The provider rejected a request with two user turns in a row: from now on they merge."""
        self.turns_apart = False
        self.sanitizer = messages.Sanitizer()

    def replace_history(self, history: list[Message], *, compacted: bool = False) -> None:
        self.history[:] = history
        if compacted:
            for plugin in self.plugins:
                plugin.on_compaction(self)

    def status(self, kind: StatusKind, message: str, data: dict[str, Any] | None = None) -> None:
        self.emit(StatusEvent(kind=kind, message=message, data=data or {}, agent=self.agent_tag))

    async def call_model(self, request: ModelRequest, *, purpose: str) -> ModelResponse:
        return await self.calls.call(request, purpose=purpose, stream=False)

    # -- helpers used by the loop and the tools --

    def begin(self, first: Message | None) -> None:
        """Add the opening user message at once (it is stored before the run goes on); a plugin
        failing on it fails the run when it starts, so that it still ends with an error event."""
        if first is not None:
            try:
                self.append(first)
            except Exception as exc:
                self._start_failure = self._start_failure or exc
        self.request = next((m.content for m in reversed(self.history) if m.role == "user"), "")

    def charge(self, usage: Usage, cost: float | None) -> None:
        """Add what a sub-agent spent to this run's usage and cost."""
        self.calls.usage.add(usage)
        meter = self.calls.cost
        if meter.total is not None:
            meter.total = None if cost is None else meter.total + cost

    async def interruptible(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Await `coro` so that `cancel()` aborts it at once (or, cancelled already, never
        starts it: `asyncio.CancelledError` either way).

        `coro` runs in the run's own task, not one of its own (two fewer Tasks per turn):
        `cancel()` cancels that task only while it is in here. The task is only ever suspended
        inside `coro`, so the cancellation lands in it, never in the loop around; once it has
        surfaced here the task's cancel request is withdrawn (`uncancel`), so the run goes on to
        end as cancelled like any other, and a cancel from elsewhere still propagates."""
        if self._cancel_requested:
            coro.close()
            raise asyncio.CancelledError
        task = asyncio.current_task()
        self._inflight = task
        try:
            return await coro
        finally:
            self._inflight = None
            if task is not None and task is self._aborted:  # raised here, or swallowed inside
                self._aborted = None
                task.uncancel()

    def tool_context(self, call: ToolCall) -> ToolContext:
        if self._keys is None:
            self._keys = IdempotencyKeys(self.session_id or self.run_id)
        return ToolContext(
            workdir=self.settings.workdir, session_id=self.session_id, run_id=self.run_id,
            call_id=call.id, idempotency_key=self._keys.key_for(call, self.history),
            approve=self.settings.approve, cancelled=self.cancelled,
            state=self.tool_state, emit_status=self.status,
            services=dict(self.settings.services), run=self._calling_run(), deps=self.deps,
        )

    def _calling_run(self) -> CallingRun:
        if self._calling is None or self._calling.session_id != self.session_id:
            self._calling = CallingRun(agent_tag=self.agent_tag, session_id=self.session_id,
                                       budget=self.budget, history=self.history,
                                       emit=self.emit, charge=self.charge,
                                       project=self.settings.project)
        return self._calling
