"""OpenTelemetry spans (GenAI semantic conventions) read back from the SDK's in-memory
exporter; without `otel` nothing of OpenTelemetry is imported."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Fault, Reply, ScriptedUsage, call
from loopwright.tracing import OtelTracer

FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.002)


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(read_only=True)
def broken() -> str:
    """Always fails."""
    raise RuntimeError("nope")


def traced() -> tuple[OtelTracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracer(provider), exporter


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_run_turn_model_call_and_tool_spans_nest_with_genai_attributes() -> None:
    tracer, exporter = traced()
    script = [Fault.rate_limit(retry_after_ms=1),
              Reply(tool_calls=[call("add", {"a": 2, "b": 3}), call("broken", {})],
                    usage=ScriptedUsage(input_tokens=40, output_tokens=7)),
              Reply("5", usage=ScriptedUsage(input_tokens=60, output_tokens=2))]
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[add, broken], callbacks=[tracer])
        result = await agent.run("2+3?")
    assert result.output == "5"
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "invoke_agent")
    turns = by_name(spans, "turn ")
    chats = by_name(spans, "chat ")
    tools = {s.name: s for s in by_name(spans, "execute_tool ")}
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    assert all(t.parent is not None and t.parent.span_id == run.context.span_id for t in turns)
    assert [c.parent.span_id for c in chats if c.parent] == [t.context.span_id for t in turns]
    first = chats[0]
    assert first.attributes is not None
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.system"] == "openai"
    assert first.attributes["gen_ai.request.model"] == "fake-model"
    assert first.attributes["gen_ai.usage.input_tokens"] == 40
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first.attributes["loopwright.attempts"] == 2
    assert [e.name for e in first.events] == ["gen_ai.retry"]
    assert set(tools) == {"execute_tool add", "execute_tool broken"}
    assert tools["execute_tool add"].attributes["gen_ai.tool.name"] == "add"
    assert tools["execute_tool broken"].status.status_code is StatusCode.ERROR
    assert all(s.parent and s.parent.span_id == turns[0].context.span_id
               for s in tools.values())
    assert run.attributes is not None and run.attributes["loopwright.stop_reason"] == "completed"
    assert run.attributes["gen_ai.usage.input_tokens"] == 100


async def test_a_failed_run_ends_its_span_with_an_error() -> None:
    tracer, exporter = traced()
    with FakeModelServer([Fault.status(401)]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", callbacks=[tracer])
        assert (await agent.run("x", raise_on_error=False)).stop_reason == "error"
    [run] = by_name(exporter.get_finished_spans(), "invoke_agent")
    [chat] = by_name(exporter.get_finished_spans(), "chat ")
    assert run.status.status_code is StatusCode.ERROR
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None and chat.attributes["error.type"] == "401"


def test_otel_is_a_setting_and_never_imported_without_it() -> None:
    code = ("import sys; from loopwright import Agent; Agent('m'); "
            "assert not any(m.startswith('opentelemetry') for m in sys.modules), 'imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    agent = Agent("m", otel=True)
    assert any(isinstance(c, OtelTracer) for c in agent.callbacks)


@pytest.mark.parametrize("stream", [True, False])
async def test_tracing_does_not_change_the_run(stream: bool) -> None:
    tracer, _ = traced()
    with FakeModelServer([Reply("hi")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", stream=stream,
                      callbacks=[tracer])
        assert (await agent.run("x")).output == "hi"
