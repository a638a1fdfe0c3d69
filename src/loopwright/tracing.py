"""OpenTelemetry spans for runs, following the GenAI semantic conventions (`loopwright[otel]`).

`Agent(otel=True)` (or `Agent(callbacks=[OtelTracer()])`) turns the run's events into spans:
`invoke_agent` (the run) → `turn N` → `chat MODEL` (one per model call, from its
`ModelCallRecord`: model, tokens, finish reason, attempts, latency) and `execute_tool NAME`
(name, call id, duration, error); retries and fallbacks are span events on the model call.
A sub-agent's run nests under the tool call that started it. Only this module imports
OpenTelemetry, and only when tracing is asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from loopwright.events import Event

_SYSTEMS = {"anthropic_messages": "anthropic", "chat_completions": "openai",
            "responses": "openai"}
_SPAN_EVENTS = {"retrying": "gen_ai.retry", "fallback": "gen_ai.fallback"}


@dataclass
class _RunSpans:
    run: Span
    turn: Span | None = None
    tools: dict[str, Span] = field(default_factory=dict)
    pending: list[tuple[str, dict[str, Any], int]] = field(default_factory=list)  # call events


class OtelTracer:
    """An event callback that records spans (through `tracer_provider`, else the global one)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        from loopwright import __version__

        self._tracer = trace.get_tracer("loopwright", __version__,
                                        tracer_provider=tracer_provider)
        self._runs: dict[str, _RunSpans] = {}  # by the event's agent tag ("" = top level)

    def __call__(self, event: Event) -> None:
        spans = self._runs.get(event.agent) or self._start_run(event.agent)
        now = time.time_ns()
        if event.type == "turn_start":
            self._end(spans.turn, now)
            spans.turn = self._tracer.start_span(
                f"turn {event.turn}", context=trace.set_span_in_context(spans.run),
                start_time=now, attributes={"loopwright.turn": event.turn})
        elif event.type == "turn_end":
            self._end(spans.turn, now)
            spans.turn = None
        elif event.type == "model_call":
            self._model_call(spans, event)
        elif event.type == "tool_call":
            spans.tools[event.id] = self._tracer.start_span(
                f"execute_tool {event.name}", kind=SpanKind.INTERNAL, start_time=now,
                context=trace.set_span_in_context(spans.turn or spans.run),
                attributes={"gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": event.name, "gen_ai.tool.call.id": event.id})
        elif event.type == "tool_result":
            span = spans.tools.pop(event.id, None)
            if span is not None:
                span.set_attribute("loopwright.tool.duration", event.duration)
                if event.is_error:
                    span.set_status(Status(StatusCode.ERROR, event.content[:200]))
                    span.set_attribute("error.type", "tool_error")
                span.end(end_time=now)
        elif event.type == "status" and event.kind in _SPAN_EVENTS:
            attributes = {k: v for k, v in event.data.items()
                          if isinstance(v, (str, int, float, bool))}
            spans.pending.append((_SPAN_EVENTS[event.kind],
                                  {**attributes, "message": event.message}, now))
        elif event.type in ("done", "error", "cancelled"):
            self._end_run(event, spans, now)

    def _start_run(self, agent: str) -> _RunSpans:
        parent = self._runs.get("")
        under = None
        if agent and parent is not None:  # a sub-agent: under the call that delegated
            open_tools = list(parent.tools.values())
            under = open_tools[-1] if open_tools else parent.turn or parent.run
        span = self._tracer.start_span(
            f"invoke_agent {agent or 'loopwright'}", kind=SpanKind.INTERNAL,
            context=trace.set_span_in_context(under) if under is not None else None,
            attributes={"gen_ai.operation.name": "invoke_agent",
                        "gen_ai.agent.name": agent or "loopwright"})
        spans = self._runs[agent] = _RunSpans(run=span)
        return spans

    def _model_call(self, spans: _RunSpans, event: Any) -> None:
        record = event.record
        start = int(record.started * 1e9)
        span = self._tracer.start_span(
            f"chat {record.model}", kind=SpanKind.CLIENT, start_time=start,
            context=trace.set_span_in_context(spans.turn or spans.run),
            attributes=_model_call_attributes(record))
        for name, attributes, when in spans.pending:
            span.add_event(name, attributes, timestamp=when)
        spans.pending.clear()
        if record.error:
            span.set_status(Status(StatusCode.ERROR, record.error[:200]))
            span.set_attribute("error.type", str(record.status or "provider_error"))
        span.end(end_time=start + int(record.latency * 1e9))

    def _end_run(self, event: Any, spans: _RunSpans, now: int) -> None:
        for span in spans.tools.values():
            span.end(end_time=now)
        self._end(spans.turn, now)
        result = getattr(event, "result", None)
        if result is not None:
            spans.run.set_attribute("loopwright.stop_reason", result.stop_reason)
            spans.run.set_attribute("gen_ai.usage.input_tokens", result.usage.input_tokens)
            spans.run.set_attribute("gen_ai.usage.output_tokens", result.usage.output_tokens)
            if result.session_id:
                spans.run.set_attribute("gen_ai.conversation.id", result.session_id)
        if event.type == "error":
            spans.run.set_status(Status(StatusCode.ERROR, event.message[:200]))
            spans.run.set_attribute("error.type", event.error_type)
        spans.run.end(end_time=now)
        del self._runs[event.agent]

    @staticmethod
    def _end(span: Span | None, now: int) -> None:
        if span is not None:
            span.end(end_time=now)


def _model_call_attributes(record: Any) -> dict[str, Any]:
    response = record.response or {}
    finish = response.get("finish_reason")
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": _SYSTEMS.get(record.mode, record.mode),
        "gen_ai.request.model": str(record.request.get("model") or record.model),
        "gen_ai.response.model": str(response.get("model") or record.model),
        "gen_ai.usage.input_tokens": record.usage.input_tokens,
        "gen_ai.usage.output_tokens": record.usage.output_tokens,
        "server.address": record.endpoint,
        "loopwright.purpose": record.purpose,
        "loopwright.attempts": record.attempts,
        "loopwright.latency": record.latency,
        "loopwright.streamed": record.streamed,
    }
    if finish:
        attributes["gen_ai.response.finish_reasons"] = [str(finish)]
    if record.cost is not None:
        attributes["loopwright.cost_usd"] = record.cost
    return attributes
