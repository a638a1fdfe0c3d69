"""Bounded inputs (issue 11, item 7): hostile tool-call arguments never stall or crash the run.

Each attack is replayed through `Agent` against the fake model server, with its harmless twin.
Speed is measured by bench/arg_repair.py, never asserted here.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.testing import FakeModelServer, Reply, call

UNTERMINATED_60KB = '{"path": "notes.txt", "content": "' + "x" * 60_000
DEEP_100K = '{"value": ' + "[" * 100_000 + "]" * 100_000 + "}"

received: list[dict[str, Any]] = []


@tool(read_only=True)
def save(path: str, content: str) -> str:
    """Pretend to save a file."""
    received.append({"path": path, "content": content})
    return f"saved {len(content)} characters"


@tool(read_only=True)
def echo(value: Any) -> str:
    """Echo a value back."""
    received.append({"value": value})
    return "echoed"


class ParseTracer:
    """Records which thread ran each `parse_arguments` call and on how many characters, through a
    trace function installed in this thread (the event loop's) and in the threads started while
    it is active (the worker threads)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []  # (thread id, characters)

    def __enter__(self) -> ParseTracer:
        threading.settrace(self._trace)
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]

    def _trace(self, frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if (event == "call" and code.co_name == "parse_arguments"
                and code.co_filename.endswith("arguments.py")):
            raw = frame.f_locals.get("raw")
            self.calls.append((threading.get_ident(), len(raw) if isinstance(raw, str) else 0))


def tool_results(server: FakeModelServer, n: int) -> list[str]:
    body = server.model_requests[n].body
    assert body is not None
    if "messages" in body:
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]


@pytest.fixture(autouse=True)
def clear_received() -> None:
    received.clear()


async def test_a_60kb_unterminated_string_is_repaired_off_the_event_loop() -> None:
    script = [Reply(tool_calls=[call("save", UNTERMINATED_60KB)], chunk_size=4096),
              Reply("saved it")]
    loop_thread = threading.get_ident()
    with ParseTracer() as tracer, FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[save])
        result = await agent.run("save the notes")
    assert result.stop_reason == "completed"
    assert received == [{"path": "notes.txt", "content": "x" * 60_000}]
    # the 60 KB arguments were parsed by worker threads only: the event loop stayed free
    parsers = {thread for thread, size in tracer.calls if size == len(UNTERMINATED_60KB)}
    assert parsers and loop_thread not in parsers


async def test_harmless_twin_small_broken_arguments_are_still_repaired() -> None:
    script = [Reply(tool_calls=[call("save", '{"path": "a.txt", "content": "hello')]),
              Reply("ok")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[save])
        result = await agent.run("save")
    assert result.stop_reason == "completed"
    assert received == [{"path": "a.txt", "content": "hello"}]


@pytest.mark.parametrize("api_mode", ["chat_completions", "responses"])
async def test_100000_deep_arguments_get_an_error_result_not_a_crash(api_mode: str) -> None:
    script = [Reply(tool_calls=[call("echo", DEEP_100K)], chunk_size=50_000),
              Reply("I will send something flatter.")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[echo],
                      api_mode=api_mode)
        result = await agent.run("echo this")
        results = tool_results(server, 1)
    assert result.stop_reason == "completed", result.error
    assert received == []
    assert len(results) == 1
    assert "nest deeper than 100 levels" in results[0]
    assert "The tool was not run" in results[0]


async def test_harmless_twin_moderate_nesting_runs() -> None:
    nested = '{"value": ' + "[" * 20 + "1" + "]" * 20 + "}"
    with FakeModelServer([Reply(tool_calls=[call("echo", nested)]), Reply("done")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[echo])
        result = await agent.run("echo this")
    assert result.stop_reason == "completed"
    value = received[0]["value"]
    for _ in range(20):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == 1


async def test_a_repeated_deep_call_does_not_crash_the_doom_loop_guard() -> None:
    script = [Reply(tool_calls=[call("echo", DEEP_100K)], chunk_size=50_000)] * 3 + [
        Reply("giving up")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[echo])
        result = await agent.run("echo this")
    assert result.stop_reason in {"completed", "loop_detected"}, result.error
    assert received == []
