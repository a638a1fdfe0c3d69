"""Sub-agents: hand a task to a child loop with its own prompt, tools and model.

Two ways in:

- the `delegate` tool, for the model: `Agent(tools=[..., make_delegate_tool()])`. Its result is the
  child's final answer under a one-line summary (turns, tools used). Several `delegate` calls in
  one turn run concurrently, at most `max_concurrent` (default 4) of one run at once (the tool
  is `concurrent_safe`: children may write, so it is not read-only; give concurrent children
  disjoint work).
- `await agent.delegate(task, tools=[...], model=...)`, for programs: a `DelegationResult`.

Children draw on the parent's iteration budget (one `IterationBudget` shared by the whole tree),
so the 70 % warning and the 100 % stop apply to the tree as a whole. A child that times out or
fails tells the parent so, with its partial work (its last text and latest tool results); it never
hangs the parent. Nesting is limited (`max_depth`, default 2): an agent at the limit is not offered
the tool. Child events are forwarded into the parent's event stream tagged with the child's id
(`event.agent`, e.g. `sub-1a2b3c` or `sub-1a2b3c/sub-4d5e6f` for a grandchild), so they never end
the parent's `stream()`. Cancelling the parent cancels its children.

A child delegated by the tool gets a session id derived from the delegate call's idempotency key
(`child_session_id`): the call the resumed parent makes again after a crash has the cut call's
key, so it finds the cut child's session (`earlier_child`). A child that had answered (the crash
came before the parent stored the call's result) gives its stored answer, with no model call; one
cut off continues its session without its task sent again, and a call the crash cut off in it
keeps its key there (tools/idempotency.py) — a key-aware tool does not repeat its effect. Any
other delegate call has a key, and so a child session, of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import typing
import uuid
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.errors import ToolError
from loopwright.tools.base import CallingRun, Tool, ToolContext

if TYPE_CHECKING:
    from loopwright.agent import Agent, RunHandle
    from loopwright.events import Event
    from loopwright.messages import Message
    from loopwright.result import RunResult, StopReason
    from loopwright.store import SessionStore

DELEGATE_TAG = "delegate"
DEFAULT_MAX_DEPTH = 2
DEFAULT_MAX_CONCURRENT = 4
_SLOTS = "delegate_slots"  # ToolContext.state key: the run's child slots
DEFAULT_TIMEOUT = 600.0
_STOP_GRACE = 10.0  # how long a cancelled child may take to wind down before it is abandoned

CHILD_PROMPT = """\
You are a sub-agent: another agent (your parent) delegated one task to you. Work on it with the
tools you have. When you are done, reply with a concise final report: what you did, what you
found or changed (name files and results), and anything left undone. The parent sees only this
report, not your intermediate steps."""

_DESCRIPTION = """\
Delegate a self-contained task to a sub-agent that works on it with its own tools and context \
and returns a report. Use it for independent pieces of work (research, a separate file, a \
check) so your own context stays small; several delegate calls in one turn run in parallel, so \
give them disjoint work. Describe the task completely: the sub-agent sees nothing of this \
conversation."""


@dataclass(kw_only=True)
class DelegationResult:
    """What one delegation produced."""

    child_id: str
    task: str
    output: str
    stop_reason: str  # a RunResult stop reason, or "timeout"
    turns: int = 0
    tools_used: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    partial: str = ""  # the child's last text and tool results, when it did not complete
    result: RunResult | None = None

    @property
    def failed(self) -> bool:
        """True when the child did not reach an answer of its own (error, timeout, cancel)."""
        return self.stop_reason in ("error", "timeout", "cancelled")

    def summary(self) -> str:
        """One line: who, how it ended, turns, tools used."""
        tools = ", ".join(f"{name}×{n}" if n > 1 else name
                          for name, n in self.tools_used.items()) or "none"
        return (f"[sub-agent {self.child_id}: {self.stop_reason} after {self.turns} turn(s); "
                f"tools used: {tools}]")

    def to_text(self) -> str:
        """The report the parent model reads."""
        parts = [self.summary()]
        if self.error:
            parts.append(f"Problem: {self.error}")
        if self.output.strip():
            parts.append(self.output.strip())
        if self.partial and (self.failed or not self.output.strip()):
            parts.append(f"Partial work so far:\n{self.partial}")
        return "\n\n".join(parts)


def make_delegate_tool(*, name: str = "delegate", max_depth: int = DEFAULT_MAX_DEPTH,
                       timeout: float = DEFAULT_TIMEOUT, default_tools: Sequence[str] | None = None,
                       models: Sequence[str] | None = None,
                       max_concurrent: int = DEFAULT_MAX_CONCURRENT, _depth: int = 0) -> Tool:
    """The `delegate` tool. `timeout`: seconds per delegation, waiting for a slot included;
    `default_tools`: tool names a child gets when the model names none (default: all the
    parent's tools); `models`: the models the model may pick for a child (default: any on the
    parent's own provider, and the user's aliases; the parent's model when none is named);
    `max_concurrent`: children of one run at once (more calls in a turn wait for a slot)."""

    def child_tool() -> Tool:  # the tool a child gets: same options, one level deeper
        return make_delegate_tool(name=name, max_depth=max_depth, timeout=timeout,
                                  default_tools=default_tools, models=models,
                                  max_concurrent=max_concurrent, _depth=_depth + 1)

    async def run_delegate(arguments: dict[str, Any], ctx: ToolContext) -> str:
        if _depth >= max_depth:
            raise ToolError(f"the delegation depth limit ({max_depth}) is reached; do this task "
                            "yourself")
        parent = ctx.services.get("agent")
        if parent is None:
            raise ToolError("delegate needs the calling agent (ToolContext.services['agent'])")
        from loopwright.tools.output import run_spill_root, spill_scope  # with a run only

        requested = arguments.get("tools")
        model = arguments.get("model") or None
        if model is not None and not models:  # a listed model was checked by the schema
            refuse_other_provider(parent, str(model))
        async with _slot(ctx, max_concurrent, timeout) as left:
            outcome = await delegate(
                parent, str(arguments["task"]),
                tools=list(requested) if requested is not None else default_tools,
                model=model,
                instructions=arguments.get("instructions") or None,
                timeout=left,
                parent_run=ctx.run,
                child_tool=child_tool if _depth + 1 < max_depth else None,
                session_id=child_session_id(ctx.idempotency_key),
                spills=(run_spill_root(ctx), spill_scope(ctx)),
                workdir=ctx.workdir,
            )
        if outcome.failed:
            raise ToolError(outcome.to_text())
        return outcome.to_text()

    model_schema: dict[str, Any] = {"type": "string", "description": (
        "Model for the sub-agent (default: your own).")}
    if models:
        model_schema["enum"] = list(models)
    return Tool(
        name=name,
        description=_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The complete task, with every detail "
                         "the sub-agent needs."},
                "tools": {"type": "array", "items": {"type": "string"}, "description": (
                    "Names of your tools the sub-agent may use (default: all of them).")},
                "model": model_schema,
                "instructions": {"type": "string", "description": (
                    "Extra instructions for the sub-agent's system prompt (role, output format).")},
            },
            "required": ["task"],
        },
        function=run_delegate,
        raw_arguments=True,
        concurrent_safe=True,
        tags=frozenset({DELEGATE_TAG}),
        timeout=timeout + 2 * _STOP_GRACE + 5,  # our own timeout reports partial work first
    )


@contextlib.asynccontextmanager
async def _slot(ctx: ToolContext, max_concurrent: int, timeout: float
                ) -> AsyncIterator[float]:
    """One of the calling run's `max_concurrent` child slots, held while the child runs: a
    reply of forty delegate calls ran forty children (forty model requests) at once. Yields
    what is left of `timeout` after the wait; `ToolError` when nothing is."""
    slots = ctx.state.get(_SLOTS)
    if not isinstance(slots, asyncio.Semaphore):  # one per run: `state` is the run's
        slots = ctx.state[_SLOTS] = asyncio.Semaphore(max(1, max_concurrent))
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        await asyncio.wait_for(slots.acquire(), timeout)
    except TimeoutError:
        raise ToolError(f"no sub-agent slot came free in {timeout:g}s ({max_concurrent} run "
                        "at once); do this task yourself or delegate it later") from None
    try:
        yield timeout - (loop.time() - started)
    finally:
        slots.release()


async def delegate(parent: Agent[Any, Any], task: str, *, tools: Sequence[str] | None = None,
                   model: str | None = None, instructions: str | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, parent_run: CallingRun | None = None,
                   child_tool: Callable[[], Tool] | None = None, session_id: str | None = None,
                   spills: tuple[Path, str] | None = None, workdir: Path | None = None
                   ) -> DelegationResult:
    """Run `task` in a child of `parent` and wait for it (at most `timeout` seconds).

    Inside a run (`parent_run`), the child shares the run's budget and its events join the run's
    stream; otherwise it gets a fresh budget and its events go to the parent's callbacks.
    `child_tool` makes the delegate tool the child is offered (None: the child may not delegate).
    `session_id`: the child's session, continued if the store holds it (None: a fresh one).
    `spills`: the spill root and the calling session's scope, whose spill directory is to hold
    the child's (its commands read what the child spilled; tools/output.nest_child_spills).
    `workdir`: the calling run's working directory, the child's too (None: the agent's)."""
    tag = parent_run.agent_tag if parent_run is not None else ""
    child_id = f"{tag}/sub-{uuid.uuid4().hex[:6]}" if tag else f"sub-{uuid.uuid4().hex[:6]}"
    subset = select_tools(parent, tools)
    if child_tool is not None:
        subset.append(child_tool())
    sink: Callable[[Event], None]
    if parent_run is not None:
        budget, sink = parent_run.budget, parent_run.emit
    else:
        from loopwright.budget import IterationBudget  # with the run, not with `Agent`'s import

        budget = IterationBudget(total=parent.settings.iteration_budget)
        sink = _callbacks_sink(parent)

    def forward(event: Event) -> None:
        sink(event if event.agent else dataclasses.replace(event, agent=child_id))

    prompt = task
    earlier = await earlier_child(parent, session_id)
    if earlier is not None:
        if earlier.result is not None:  # it had answered: that answer, not a second run
            forward(_note(f"the sub-agent of this delegate call had finished before a crash "
                          f"({earlier.result.stop_reason}); its stored answer is returned "
                          "without running it again", session_id, "replayed"))
            return _outcome_of(earlier, child_id, task)
        # cut off: it continues its session (its task is there; its cut calls get the
        # interrupted note and their keys), not the task sent again on top of its work
        forward(_note("the sub-agent of this delegate call was cut off by a crash; it "
                      "continues its session", session_id, "resumed"))
        prompt = ""
    system_prompt = CHILD_PROMPT + (f"\n\n{instructions.strip()}" if instructions else "")
    child = parent.make_child(tools=subset, model=model, system_prompt=system_prompt)
    if spills is not None:
        from loopwright.tools.output import nest_child_spills

        with contextlib.suppress(OSError):  # then the child's spills stay out of the parent's sight
            await asyncio.to_thread(nest_child_spills, *spills,
                                    session_id or child.settings.session_id or "")
    # the child's directory is its calling run's, a project or not as that run was told
    # (`run(workdir=, project=)`): its instruction files reach the child exactly when they
    # reached the parent; outside a run, the agent's own directory is its project
    project = parent_run.project if parent_run is not None else (
        workdir is None or workdir == parent.state_services.workdir)
    handle = await child.start(prompt, extra_callback=forward, budget=budget, agent_tag=child_id,
                               parent_session_id=parent_run.session_id if parent_run else None,
                               session_id=session_id, workdir=workdir, project=project)
    try:
        timed_out = not await _wait(handle, timeout)
    finally:
        await child.aclose()
    outcome = _outcome(handle, child_id, task, timeout if timed_out else None)
    if parent_run is not None and outcome.result is not None:
        _charge(parent_run, outcome.result)
    return outcome


def child_session_id(idempotency_key: str) -> str | None:
    """The session of the child a delegate call with this key runs (None without a key: a
    fresh one). The same key, the same session: the call made again after a crash continues
    the cut call's child; the key is not shown in the id."""
    if not idempotency_key:
        return None
    text = f"loopwright delegated session\0{idempotency_key}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True, kw_only=True)
class EarlierChild:
    """The child session a delegate call made again after a crash finds in the store."""

    history: list[Message]
    result: RunResult | None  # of its last run, when that run ended with an answer


# a child whose last run ended so had given the delegate call its result; one that failed
# (an error, a cancel: the parent's own, or a timeout) or never ended goes on instead
_FINISHED = frozenset({"completed", "max_turns", "budget_exhausted", "loop_detected", "refused",
                       "usage_limit"})


async def earlier_child(parent: Agent[Any, Any], session_id: str | None) -> EarlierChild | None:
    """The child session `session_id` as a crash left it; None when the store holds none, or
    none of its messages (cut before its task was written: it starts anew)."""
    from loopwright.store.rows import DamagedRowError, DamagedSessionWarning

    store = parent.state_services.store
    if session_id is None or store is None:
        return None
    info = await store.get(session_id)
    if info is None or not info.message_count:
        return None
    history = await store.load(session_id)
    if info.stop_reason not in _FINISHED:
        return EarlierChild(history=history, result=None)
    try:
        result = await _stored_result(store, session_id, history, info.stop_reason)
    except DamagedRowError as exc:
        # its messages were read whole (each row checked), only the summary of its end is
        # damaged: it goes on in its session as a cut child does (its finished calls are in
        # its history, not run again), rather than its parent's call failing for good
        warnings.warn(DamagedSessionWarning(f"{exc}; the sub-agent continues its session"),
                      stacklevel=2)
        return EarlierChild(history=history, result=None)
    return EarlierChild(history=history, result=result)


async def _stored_result(store: SessionStore, session_id: str, history: list[Message],
                         stop_reason: str) -> RunResult:
    """The result the session's last run ended with: its stored terminal event (the built-in
    stores), else its last answer (a store without an event log)."""
    from loopwright.result import RunResult
    from loopwright.store.rows import answer_at

    read_events = getattr(store, "events", None)
    events: list[dict[str, Any]] = await read_events(session_id) if read_events else []
    ends = [e for e in events if e.get("type") in ("done", "error", "cancelled")]
    # its own, not those of its sub-agents (kept in its log too, tagged one level deeper)
    depth = min((str(e.get("agent", "")).count("/") for e in ends), default=0)
    ends = [e for e in ends if str(e.get("agent", "")).count("/") == depth]
    if ends and "result" in ends[-1]:
        result = answer_at(session_id, ends[-1]["result"])
        result.messages = history
        return result
    answer = next((m.content for m in reversed(history)
                   if m.role == "assistant" and not m.tool_calls), "")
    return RunResult(output=answer, messages=history, turns=0,
                     stop_reason=typing.cast("StopReason", stop_reason))


def _outcome_of(earlier: EarlierChild, child_id: str, task: str) -> DelegationResult:
    """The delegate call's result from a child that had finished (no model call)."""
    result = earlier.result
    assert result is not None
    reason = result.stop_reason
    return DelegationResult(
        child_id=child_id, task=task, output=str(result.output), stop_reason=reason,
        turns=result.turns, tools_used=tools_used(earlier.history), error=result.error,
        partial=partial_work(earlier.history) if reason != "completed" else "", result=result)


def _note(message: str, session_id: str | None, what: str) -> Event:
    """The status event telling the run's stream how a child left by a crash was taken up."""
    from loopwright.events import StatusEvent

    return StatusEvent(kind="custom", message=message,
                       data={"tool": "delegate", "child": what, "session_id": session_id})


def refuse_other_provider(parent: Agent[Any, Any], model: str) -> None:
    """`ToolError` for a model the model names for a child that would take the task to a
    provider the user did not choose: a provider-prefixed name (`openrouter:…`) other than the
    parent's own provider, unless the user named it (an alias of the settings). A name without
    a prefix stays on the parent's endpoint. (With `models` the user listed what is allowed.)"""
    from loopwright.endpoints.resolve import split_model

    settings = parent.settings
    if model in settings.aliases or model == settings.model:
        return
    wanted = split_model(model)[0]
    mine = settings.model or ""
    own = split_model(settings.aliases.get(mine, mine))[0]
    if wanted is not None and wanted != own:
        raise ToolError(f"the model {model!r} is of another provider ({wanted}) than yours: a "
                        "sub-agent runs on your own provider (name a model without a prefix, "
                        "or leave `model` out for your own)")


def select_tools(parent: Agent[Any, Any], names: Sequence[str] | None) -> list[Tool]:
    """The parent's tools by name (all visible ones when `names` is None), minus delegate tools:
    a child gets its own, depth-bound one."""
    visible = [t for t in parent.registry.visible() if DELEGATE_TAG not in t.tags]
    if names is None:
        return visible
    by_name = {t.name: t for t in visible}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ToolError(f"unknown tool(s) for the sub-agent: {', '.join(unknown)}. Tools you can "
                        f"give it: {', '.join(by_name) or '(none)'}")
    return [by_name[n] for n in dict.fromkeys(names)]


def _callbacks_sink(parent: Agent[Any, Any]) -> Callable[[Event], None]:
    def sink(event: Event) -> None:
        for callback in parent.callbacks:
            callback(event)

    return sink


async def _wait(handle: RunHandle, timeout: float | None) -> bool:
    """True when the child finished within `timeout`. Cancelling the caller cancels the child."""
    try:
        done, _ = await asyncio.wait({handle.task}, timeout=timeout)
    except asyncio.CancelledError:
        await _stop(handle)
        raise
    if not done:
        await _stop(handle)
    return bool(done)


async def _stop(handle: RunHandle) -> None:
    """Cancel the child at its next boundary; abandon it (hard cancel) if it will not stop."""
    handle.cancel()
    done, _ = await asyncio.wait({handle.task}, timeout=_STOP_GRACE)
    if not done:
        handle.task.cancel()
        await asyncio.wait({handle.task}, timeout=_STOP_GRACE)


def _outcome(handle: RunHandle, child_id: str, task: str,
             timed_out_after: float | None) -> DelegationResult:
    history = handle.state.history
    result: RunResult | None = None
    error: str | None = None
    if handle.task.cancelled():
        error = "the sub-agent did not wind down when cancelled and was abandoned"
    elif handle.task.done():
        if handle.task.exception() is None:
            result = handle.task.result()
        else:
            error = f"the sub-agent crashed: {handle.task.exception()!r}"
    stop_reason: str = result.stop_reason if result is not None else "error"
    if timed_out_after is not None:
        spent = round(timed_out_after, 1)  # the delegation's time: waiting for a slot took some
        stop_reason, error = "timeout", f"the sub-agent timed out after {spent:g}s"
    elif result is not None and result.error:
        error = result.error
    complete = result is not None and timed_out_after is None and stop_reason != "cancelled"
    return DelegationResult(
        child_id=child_id, task=task,
        output=result.output if complete and result is not None else "",
        stop_reason=stop_reason,
        turns=result.turns if result is not None else handle.state.turn,
        tools_used=tools_used(history), error=error,
        partial=partial_work(history) if stop_reason != "completed" else "",
        result=result,
    )


def tools_used(history: list[Message]) -> dict[str, int]:
    """Tool name → number of calls, in first-use order."""
    counts: Counter[str] = Counter()
    for msg in history:
        if msg.role == "assistant":
            counts.update(call.name for call in msg.tool_calls)
    return dict(counts)


def partial_work(history: list[Message], *, results: int = 5, clip: int = 500) -> str:
    """The child's last text and latest tool results, for a parent whose child did not finish."""
    last_text = next((m.content for m in reversed(history)
                      if m.role == "assistant" and m.content.strip()), "")
    recent = [m for m in history if m.role == "tool"][-results:]
    parts = []
    if last_text:
        parts.append(f"Last text: {_clip(last_text, clip * 2)}")
    for msg in recent:
        flag = " (error)" if msg.is_error else ""
        parts.append(f"Result of {msg.name}{flag}: {_clip(msg.content, clip)}")
    return "\n".join(parts) or "(nothing yet)"


def _charge(parent_run: CallingRun, child: RunResult) -> None:
    """A parent run's usage and cost include its children's."""
    parent_run.charge(child.usage, child.cost)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]} […]"
