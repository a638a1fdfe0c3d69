"""The one home for a model call: cancel, retries and fallback (through the provider chain),
usage, cost, and the call's record.

Every call a run makes — a turn, the tool-less summary when the budget runs out, a compaction
summary, a rubric grade, a side call of a plugin — goes through `ModelCalls.call()`. It adds the
call's usage and cost to the run (also of replies that were thrown away before a failure), turns
a `cancel()` into `RunCancelled`, and emits one `model_call` event carrying a `ModelCallRecord`
(made only when the run has a listener: a callback, `stream()` or the session recorder, which
stores that record, `SessionStore` table `model_calls`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from loopwright.endpoints.client import CallListeners, ClientReport, StatusListener
from loopwright.endpoints.fallback import ProviderChain
from loopwright.errors import ContextOverflowError, ProviderError, RunCancelled
from loopwright.events import REPLY_ANEW, Event, StatusKind, new_call_record, new_model_call
from loopwright.messages import ModelRequest, ModelResponse, Usage
from loopwright.profiles.prices import CostMeter, cost_of
from loopwright.wire.stream import DeltaListener, ToolArgsListener

if TYPE_CHECKING:
    from loopwright.routing.choose import RouteFunction  # a type: routing loads when used

LAST_MESSAGE_CHARS = 2_000  # of the request's newest message, kept in the record
MIN_REFIT_ROOM = 256  # tokens a reply's allowance is fitted down to after an overflow, at least


class CallOwner(Protocol):
    """What `ModelCalls` needs of the run it calls for (`run_state.RunState` is one)."""

    @property
    def run_id(self) -> str: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def agent_tag(self) -> str: ...
    @property
    def turn(self) -> int: ...
    @property
    def cancel_requested(self) -> bool: ...
    @property
    def listened(self) -> bool: ...
    def emit(self, event: Event) -> None: ...
    def status(self, kind: StatusKind, message: str,
               data: dict[str, Any] | None = None) -> None: ...
    async def interruptible(self, coro: Coroutine[Any, Any, Any]) -> Any: ...


class ModelCalls:
    """A run's model calls, with the usage and cost they added up to."""

    def __init__(self, owner: CallOwner, chain: ProviderChain, *, stream: bool,
                 side: Mapping[str, ProviderChain] | None = None,
                 route: RouteFunction | None = None) -> None:
        self.owner = owner
        self.chain = chain
        self.side = dict(side or {})  # purpose → its own chain (side models, routing/side.py)
        self.route = route  # the choose_model hook (routing/choose.py)
        self.stream = stream
        self.usage = Usage()
        self.cost = CostMeter()  # USD, call by call; None once a call's model has no price
        self.side_usage: dict[str, SideUsage] = {}  # every purpose but "turn", counted apart
        self.told_fitted = False  # a run says once that the max_tokens set was fitted

    @property
    def model(self) -> str:
        """The model the run's calls go to now (a fallback once the chain moved on)."""
        return self.chain.model

    async def call(self, request: ModelRequest, *, purpose: str,
                   on_text: DeltaListener | None = None,
                   on_reasoning: DeltaListener | None = None,
                   on_tool_args: ToolArgsListener | None = None,
                   stream: bool | None = None) -> ModelResponse:
        """Send `request` and return the reply. Raises `RunCancelled` when the run was
        cancelled meanwhile, and what the chain raises (`ProviderError`…) when it failed; the
        record is emitted either way. Text and reasoning reach the listeners given (none: the
        call is silent, as side calls must be)."""
        streamed = self.stream if stream is None else stream
        self._fit_max_tokens(request)
        reports: list[ClientReport] = []
        # a text filter holding part of a reply (half a call, half an output object) drops it
        # when the reply starts anew, else the new reply is read as its continuation
        anew = getattr(on_text, "reply_anew", None)
        on_status = self.owner.status if anew is None else _telling(self.owner.status, anew)
        listeners = CallListeners(on_text=on_text, on_reasoning=on_reasoning,
                                  on_status=on_status, on_report=reports.append,
                                  on_tool_args=on_tool_args)
        chain = self.side.get(purpose, self.chain)
        if self.route is not None:
            chain = await self.route(self.owner, request, purpose, chain) or chain
        call = _Call(purpose=purpose, request=request, streamed=streamed, reports=reports,
                     chain=chain)
        refitted = False
        while True:
            try:
                response: ModelResponse = await self.owner.interruptible(
                    chain.complete(request, stream=streamed, listeners=listeners))
                break
            except asyncio.CancelledError:
                if self.owner.cancel_requested:
                    self._record(call, None, Usage(), error="cancelled")
                    raise RunCancelled from None
                raise
            except ContextOverflowError as exc:  # over for the reply's allowance alone: once
                if refitted or not self._fit_to_overflow(request, exc):
                    self._record(call, None, exc.discarded_usage or Usage(), error=str(exc),
                                 status=exc.status)
                    raise
                refitted = True
            except ProviderError as exc:  # replies thrown away before the failure were paid for
                self._record(call, None, exc.discarded_usage or Usage(), error=str(exc),
                             status=exc.status)
                raise
            except Exception as exc:
                self._record(call, None, Usage(), error=f"{type(exc).__name__}: {exc}")
                raise
        self._record(call, response, response.usage)
        return response

    def _fit_max_tokens(self, request: ModelRequest) -> None:
        """A `max_tokens` set (in the settings, or on the request by a plugin) that the window
        cannot hold beside the request is sent as what the window leaves: sent whole, the
        provider rejects the request (Anthropic's run stopped) — the default allowance is
        fitted the same way (`ModelRequest.output_room`). Said once a run, as a status."""
        asked, room = request.max_tokens, request.output_room
        if asked is None or room is None or asked <= room:
            return
        request.max_tokens = room
        if self.told_fitted:
            return
        self.told_fitted = True
        self.owner.status("context_window", f"max_tokens {asked:,} is more than the window "
                          f"leaves beside the request: sent as {room:,}",
                          {"max_tokens": asked, "sent": room})

    def _fit_to_overflow(self, request: ModelRequest, exc: ContextOverflowError) -> bool:
        """The provider counted the input and says it fits, but not with the reply's allowance
        (Anthropic, OpenAI, vLLM, OpenRouter name both): the allowance is fitted to what its
        count leaves, to be sent once more. False when that is not what it said, when fitting
        changes nothing, when it leaves less than `MIN_REFIT_ROOM` (the input itself must
        shrink), or when the window it names is below the one this request was sized for — at
        least its room plus the estimate's least margin: that window is compaction's to learn,
        for this run and the next."""
        from loopwright.context.window import ROOM_MARGIN_TOKENS
        from loopwright.endpoints.probe import allowance_overrun

        told = allowance_overrun(f"{exc} {exc.body}")
        if told is None or told[1] - told[0] < MIN_REFIT_ROOM:
            return False
        used, window = told
        if request.output_room is not None and window < request.output_room + ROOM_MARGIN_TOKENS:
            return False
        room = window - used
        refitted = False
        # what the wire format fits its own allowance to (Anthropic's default, a thinking
        # budget beside the max_tokens set)
        if request.output_room is None or request.output_room > room:
            request.output_room, refitted = room, True
        if request.max_tokens is not None and request.max_tokens > room:
            self._fit_max_tokens(request)
            refitted = True
        return refitted

    def _record(self, call: _Call, response: ModelResponse | None, usage: Usage, *,
                error: str | None = None, status: int | None = None) -> None:
        chain = call.chain
        model = chain.model
        reports = call.reports
        attempts = reports[0].attempts if len(reports) == 1 else sum(r.attempts for r in reports)
        if attempts > usage.requests:  # every request made counts, failed ones included
            usage = dataclasses.replace(usage, requests=attempts)
        self.usage.add(usage)
        cost = cost_of(model, usage)  # once, for the run's total and the record
        self.cost.charge(cost)
        if call.purpose != "turn":
            self.side_usage.setdefault(call.purpose, SideUsage()).add(model, usage)
        owner = self.owner
        if not owner.listened:  # the record is only ever read from its event
            return
        last = call.reports[-1] if call.reports else None
        record = new_call_record(  # a `ModelCallRecord` (events.py: `maker`)
            id=os.urandom(8).hex(), purpose=call.purpose, run_id=owner.run_id,  # 64 bits
            session_id=owner.session_id, agent=owner.agent_tag, turn=owner.turn,
            model=last.model if last else model,
            provider=last.label if last else chain.current.label,
            endpoint=last.endpoint if last else chain.current.endpoint.shown_url,
            mode=last.mode if last else chain.current.mode,
            started=call.started, latency=round(time.perf_counter() - call.clock, 6),
            attempts=attempts,
            streamed=last.streamed if last else call.streamed,
            request=describe_request(call.request, stream=call.streamed),
            response=describe_response(response) if response is not None else None,
            usage=usage.copy(),
            cost=cost if usage.requests else None, error=error,
            status=status if status is not None else (last.status if last else None),
        )
        owner.emit(new_model_call(record=record, agent=owner.agent_tag))


@dataclass
class SideUsage:
    """What the calls of one side purpose (compaction, grading, memory, …) cost."""

    calls: int = 0
    models: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: CostMeter = field(default_factory=CostMeter)

    def add(self, model: str, usage: Usage) -> None:
        self.calls += 1
        if model not in self.models:
            self.models.append(model)
        self.usage.add(usage)
        cost = cost_of(model, usage)  # once, for the run's total and the record
        self.cost.charge(cost)

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "models": list(self.models),
                "usage": self.usage.to_dict(), "cost": self.cost.total}


@dataclass(kw_only=True)
class _Call:
    purpose: str
    request: ModelRequest
    streamed: bool
    reports: list[ClientReport]
    chain: ProviderChain
    started: float = field(default_factory=time.time)
    clock: float = field(default_factory=time.perf_counter)


def describe_request(request: ModelRequest, *, stream: bool) -> dict[str, Any]:
    """The record's view of a request: its parameters, the tools offered by name, how many
    messages, and the newest one (clipped)."""
    last = request.messages[-1] if request.messages else None
    out: dict[str, Any] = {
        "model": request.model, "stream": stream, "messages": len(request.messages),
        "tools": [t.name for t in request.tools],
    }
    # written out, not a loop over the names with getattr: once a model call
    if request.max_tokens is not None:
        out["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        out["temperature"] = request.temperature
    if request.reasoning_effort is not None:
        out["reasoning_effort"] = request.reasoning_effort
    if request.tool_choice is not None:
        out["tool_choice"] = request.tool_choice
    if last is not None:
        out["last_message"] = {"role": last.role, "content": last.content[:LAST_MESSAGE_CHARS],
                               "chars": len(last.content)}
    return out


def describe_response(response: ModelResponse) -> dict[str, Any]:
    """The record's view of a reply: finish reason, text, tool calls, reasoning size."""
    message = response.message
    return {
        "finish_reason": response.finish_reason,
        "content": message.content,
        "tool_calls": [c.to_dict() for c in message.tool_calls],
        "reasoning_chars": len(message.reasoning or ""),
        "model": response.model,
    }


def _telling(status: StatusListener, reply_anew: Callable[[], None]) -> StatusListener:
    """`status`, also calling `reply_anew` when a model call's reply starts again from its
    beginning (a fallback model's, or a retry's that differs from what broke off)."""

    def on_status(kind: StatusKind, message: str, data: dict[str, Any]) -> None:
        if kind in REPLY_ANEW:
            reply_anew()
        status(kind, message, data)

    return on_status
