"""Run one batch of tool calls: resolve, parse and validate arguments (`prepare`: the review
stage's argument checks call it first, `preparer`), gate, run, bound, record.

Calls run concurrently only when every call in the batch is read-only (or `concurrent_safe`, e.g.
sub-agents) and none is interactive; results always come back in call order. Nothing a tool does
can crash the run.
"""

from __future__ import annotations

import asyncio
import functools
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from loopwright.arguments import ArgumentsError, is_complete_json, parse_arguments_async
from loopwright.attachments import Attachment, split_attachments
from loopwright.errors import ToolError
from loopwright.messages import ToolCall
from loopwright.tools.argument_errors import (
    arguments_error_message,
    describe_validation_error,
    placeholder_message,
    truncated_call_message,
    unknown_tool_message,
)
from loopwright.tools.base import Tool, ToolContext
from loopwright.tools.registry import ToolRegistry
from loopwright.tools.results import render_result
from loopwright.tools.schema_echo import (
    schema_echo_message,
    takes_no_arguments,
    without_echoed_keywords,
)


@dataclass(kw_only=True)
class PreparedCall:
    """A call whose tool was found and whose arguments validated."""

    call: ToolCall
    tool: Tool
    arguments: dict[str, Any]


@dataclass(kw_only=True)
class ToolOutcome:
    """What one call produced, as the model will read it."""

    call: ToolCall
    content: str
    is_error: bool = False
    duration: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)  # extra facts for events and audit
    attachments: list[Attachment] = field(default_factory=list)  # images / PDFs it returned


@dataclass(kw_only=True, frozen=True)
class GateDecision:
    """A gate's verdict on a call: deny with a reason, or allow (optionally with new arguments)."""

    allow: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None


class ToolGate(Protocol):
    """Runs before a tool (hooks, policy, approval). `None` means no objection."""

    async def __call__(self, prepared: PreparedCall, ctx: ToolContext) -> GateDecision | None: ...


class ResultFilter(Protocol):
    """Runs after a tool (output bounding, hooks); may replace the outcome."""

    async def __call__(self, prepared: PreparedCall | None, outcome: ToolOutcome,
                       ctx: ToolContext) -> ToolOutcome: ...


CallObserver = Callable[[ToolCall, dict[str, Any] | str], None]
OutcomeObserver = Callable[[ToolOutcome], Awaitable[None]]  # awaited before the next call


@dataclass(kw_only=True)
class ToolExecutor:
    """Executes batches against a registry with gates before and filters after each call."""

    registry: ToolRegistry
    gates: list[ToolGate] = field(default_factory=list)
    filters: list[ResultFilter] = field(default_factory=list)
    default_timeout: float | None = None
    resolver: Callable[[str], Tool | None] | None = None  # overrides registry lookup (tool_search)

    async def run_batch(
        self,
        calls: Sequence[ToolCall],
        ctx_for: Callable[[ToolCall], ToolContext],
        *,
        truncated: bool = False,
        intercepted: dict[str, str] | None = None,
        prepared: Mapping[str, PreparedCall | ToolOutcome] | None = None,
        on_call: CallObserver | None = None,
        on_outcome: OutcomeObserver | None = None,
        request: str = "",
    ) -> list[ToolOutcome]:
        """Run `calls`; `intercepted` maps call ids to an error the review stage already decided
        on; `prepared` holds the calls the review stage already prepared (`preparer`): they
        are not parsed or validated again. `request` is the user's request: the examples in
        argument errors take values from it."""
        intercepted = intercepted or {}
        prepared = prepared or {}
        items: list[PreparedCall | ToolOutcome] = []
        for call in calls:
            blocked = intercepted.get(call.id)
            item = prepared.get(call.id)
            # `item` is this very call as the review stage prepared it (the same object: a
            # reply may reuse a call id); a refusal it turned into a skip keeps its own data
            if item is None or item.call is not call or (blocked is not None and not (
                    isinstance(item, ToolOutcome) and item.content == blocked)):
                if blocked is not None and not _cut_off(call, truncated):  # a cut call says so
                    item = ToolOutcome(call=call, content=blocked, is_error=True,
                                       data={"intercepted": True})
                else:
                    item = await self.prepare(call, truncated=truncated, request=request)
            if on_call is not None:
                on_call(call, item.arguments if isinstance(item, PreparedCall) else call.arguments)
            items.append(item)
        runnable = [p for p in items if isinstance(p, PreparedCall)]
        concurrent = len(runnable) > 1 and all(
            (p.tool.read_only or p.tool.concurrent_safe) and not p.tool.interactive
            for p in runnable
        )

        async def finish(item: PreparedCall | ToolOutcome) -> ToolOutcome:
            if isinstance(item, PreparedCall):
                outcome = await self._run_one(item, ctx_for(item.call))
            else:
                outcome = await self._filter(None, item, ctx_for(item.call))
            if on_outcome is not None:
                await on_outcome(outcome)
            return outcome

        if concurrent:
            return list(await asyncio.gather(*(finish(p) for p in items)))
        results = []
        for item in items:
            results.append(await finish(item))
        return results

    def preparer(self, into: dict[str, PreparedCall | ToolOutcome], *, truncated: bool = False,
                 request: str = "") -> Callable[[ToolCall], Awaitable[PreparedCall | ToolOutcome]]:
        """`prepare` for the calls of one reply, each prepared once into `into`: the review
        stage's argument checks call it, and `run_batch(prepared=into)` runs what they let
        through with the arguments already validated."""
        return functools.partial(self.prepare, truncated=truncated, request=request, into=into)

    def _lookup(self, name: str) -> Tool | None:
        if self.resolver is not None:
            return self.resolver(name)
        return self.registry.get(name)

    async def prepare(self, call: ToolCall, *, truncated: bool = False, request: str = "",
                      into: dict[str, PreparedCall | ToolOutcome] | None = None
                      ) -> PreparedCall | ToolOutcome:
        """The tool `call` names and its validated arguments, or the error outcome that answers
        it instead: cut off by the output limit (`truncated`), an unknown tool (data
        `unknown_tool`), arguments that do not parse, repeat the schema, hold an example's
        placeholder or do not validate (data `bad_arguments`). The review stage's
        `unknown_tool` and `bad_arguments` checks read this (`preparer`); whatever they do not
        stop runs with what it prepared. `into` keeps each call's preparation by call id, made
        once."""
        if into is not None:
            done = into.get(call.id)
            if done is not None and done.call is call:
                return done
        item: PreparedCall | ToolOutcome
        found = None if _cut_off(call, truncated) else self._lookup(call.name)
        if found is None:
            item = self._unrunnable(call, truncated=truncated, request=request)
        else:
            try:
                # a tool without parameters has nothing to get wrong: whatever came as its
                # arguments (a copy of its schema, a list of paths) still asks to call it
                raw = ({} if takes_no_arguments(found.parameters)
                       else (await parse_arguments_async(call.arguments)).value)
            except ArgumentsError as exc:
                item = ToolOutcome(call=call, is_error=True,
                                   data={"bad_arguments": True, "unparsed": True},
                                   content=arguments_error_message(
                                       call.name, str(exc), found.parameters, request=request))
            else:
                item = _checked(call, found, raw, request=request)
        if into is not None:
            into[call.id] = item
        return item

    def _unrunnable(self, call: ToolCall, *, truncated: bool, request: str) -> ToolOutcome:
        """A call cut off by the output limit, or one naming a tool that does not exist."""
        if _cut_off(call, truncated):  # first: it says what to do
            return ToolOutcome(call=call, content=truncated_call_message(call.name),
                               is_error=True, data={"truncated": True})
        suggested = self.registry.suggest(call.name)
        closest = self._lookup(suggested[0]) if suggested else None
        schema = closest.parameters if closest is not None else None
        return ToolOutcome(call=call, is_error=True, data={"unknown_tool": True},
                           content=unknown_tool_message(call.name, suggested, schema,
                                                        request=request))

    async def _run_one(self, prepared: PreparedCall, ctx: ToolContext) -> ToolOutcome:
        for gate in self.gates:  # approvals happen here: the tool's time starts after them
            decision = await gate(prepared, ctx)
            if decision is None:
                continue
            if not decision.allow:
                outcome = ToolOutcome(
                    call=prepared.call, is_error=True, data={"denied": True,
                                                              "reason": decision.reason},
                    content=f"Error: the call to {prepared.tool.name!r} was denied: "
                            f"{decision.reason or 'not allowed'}. Do not retry it as is.")
                return await self._filter(prepared, outcome, ctx)
            if decision.arguments is not None:
                prepared = PreparedCall(call=prepared.call, tool=prepared.tool,
                                        arguments=decision.arguments)
        started = time.perf_counter()
        outcome = await self._invoke(prepared, ctx)
        outcome.duration = max(0.0, time.perf_counter() - started - ctx.approval_wait)
        return await self._filter(prepared, outcome, ctx)

    async def _invoke(self, prepared: PreparedCall, ctx: ToolContext) -> ToolOutcome:
        tool = prepared.tool
        timeout = tool.timeout or self.default_timeout
        limit = asyncio.timeout(timeout) if timeout is not None else None
        try:
            if limit is None:  # no limit: no timer armed and disarmed around every call
                value = await tool.invoke(prepared.arguments, ctx)
            else:
                async with limit:
                    value = await tool.invoke(prepared.arguments, ctx)
        except ToolError as exc:
            return ToolOutcome(call=prepared.call, content=f"Error: {exc}", is_error=True)
        except TimeoutError as exc:
            # without a limit, or before it expired, it is the tool's own (a socket, a client)
            if limit is None or not limit.expired():
                return _raised(prepared, exc)
            return ToolOutcome(call=prepared.call, is_error=True, data={"timeout": True},
                               content=f"Error: {tool.name!r} timed out after {timeout:g}s.")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return _raised(prepared, exc)
        files, value = split_attachments(value)
        text = render_result(value) if value is not None or not files else f"({len(files)} file(s))"
        return ToolOutcome(call=prepared.call, content=text, attachments=files)

    async def _filter(self, prepared: PreparedCall | None, outcome: ToolOutcome,
                      ctx: ToolContext) -> ToolOutcome:
        for result_filter in self.filters:
            outcome = await result_filter(prepared, outcome, ctx)
        return outcome


def _checked(call: ToolCall, tool: Tool, raw: dict[str, Any], *, request: str
             ) -> PreparedCall | ToolOutcome:
    """Parsed arguments that echo the schema, hold an example's placeholder or do not validate
    are refused; the others are the call's validated arguments."""
    echo = schema_echo_message(call.name, raw, tool.parameters, request=request)
    stripped = without_echoed_keywords(raw, tool.parameters) if echo else None
    if stripped is not None:
        raw, echo = stripped, None
    if echo is not None:
        return ToolOutcome(call=call, is_error=True, content=echo,
                           data={"bad_arguments": True, "schema_echo": True})
    copied = placeholder_message(call.name, raw, tool.parameters)
    if copied is not None:
        return ToolOutcome(call=call, is_error=True, content=copied,
                           data={"bad_arguments": True, "placeholder": True})
    try:
        arguments = tool.validate(raw)
    except ArgumentsError as exc:
        problem = str(exc)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        problem = describe_validation_error(exc)
    else:
        return PreparedCall(call=call, tool=tool, arguments=arguments)
    return ToolOutcome(call=call, is_error=True, data={"bad_arguments": True},
                       content=arguments_error_message(call.name, problem, tool.parameters,
                                                       request=request))


def _cut_off(call: ToolCall, truncated: bool) -> bool:
    return truncated and not is_complete_json(call.arguments)


def _raised(prepared: PreparedCall, exc: Exception) -> ToolOutcome:
    return ToolOutcome(call=prepared.call, is_error=True, data={
        "exception": type(exc).__name__, "traceback": traceback.format_exc(limit=5)},
        content=f"Error: {prepared.tool.name!r} raised {type(exc).__name__}: {exc}")
