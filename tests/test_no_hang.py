"""No hang, ever: an unexpected exception anywhere in a run (an adapter meeting a shape it does
not know, a plugin bug, a failing callback) ends the run with an `error` event carrying the
exception; `agent.run()`, `agent.stream()` and the CLI all finish."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, event_from_dict
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import ErrorEvent, Event, StatusEvent
from loopwright.messages import Message, assistant, user
from loopwright.plugins import LoopPlugin
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem
from loopwright.wire.stream import DeltaListener

FAST = RetryPolicy(base_delay=0.01, jitter=0)
HOOKS = ("on_run_start", "on_message", "before_model", "text_filter", "after_model",
         "on_answer", "on_context_overflow", "on_compaction", "on_run_end")
# an answer shape no adapter knows: `tool_calls` is a number
UNKNOWN_SHAPE = Fault.status(200, body={"choices": [{"message": {"tool_calls": 5}}]})
OVERFLOW = Fault.status(400, {"error": {"message": "This model's maximum context length is "
                                                   "2048 tokens. Please reduce the length."}})


class Faulty(LoopPlugin):
    """Records every hook it sees; raises a plain TypeError (a bug, not a loopwright error) in
    the one it is told to."""

    def __init__(self, hook: str | None) -> None:
        self.hook = hook
        self.seen: set[str] = set()

    def _visit(self, hook: str) -> None:
        self.seen.add(hook)
        if hook == self.hook:
            raise TypeError(f"bug in {hook}")

    async def on_run_start(self, run: Any) -> None:
        self._visit("on_run_start")

    def on_message(self, run: Any, message: Message) -> None:
        self._visit("on_message")

    async def before_model(self, run: Any, request: Any) -> None:
        self._visit("before_model")

    def text_filter(self, run: Any, listener: DeltaListener) -> DeltaListener:
        self._visit("text_filter")
        return listener

    async def after_model(self, run: Any, response: Any) -> None:
        self._visit("after_model")

    async def on_answer(self, run: Any, answer: str) -> str | None:
        self._visit("on_answer")
        return None

    async def on_context_overflow(self, run: Any, request: Any, error: Any) -> bool:
        self._visit("on_context_overflow")
        return False

    def on_compaction(self, run: Any) -> None:
        self._visit("on_compaction")

    async def on_run_end(self, run: Any, result: Any) -> None:
        self._visit("on_run_end")


def long_history() -> list[Message]:
    """Earlier turns worth ~2,800 tokens: over the 2,048 the fake server accepts."""
    history = [user("Translate the manual.")]
    for n in range(12):
        history += [assistant(f"Chapter {n} translated. " + "la la " * 150), user("go on")]
    return [*history, assistant("Done with the chapters.")]


def every_hook_handler(request: RecordedRequest) -> ScriptItem:
    """A request over 2,048 tokens is refused as too long (the overflow hook runs, and
    compaction); summary calls get a report; the rest the answer."""
    if len(request.raw_body) // 4 > 2_048:
        return OVERFLOW
    if request.body["messages"][0].get("content") == SUMMARY_SYSTEM:
        return Reply("## Goal\nTranslate.")
    return Reply("All chapters are done.")


async def run_with(plugin: Faulty, *, streamed: bool) -> tuple[Any, list[Event]]:
    with FakeModelServer(handler=every_hook_handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", plugins=[plugin], retry=FAST,
                      context_window=32_000)
        if not streamed:
            events: list[Event] = []
            agent.callbacks.append(events.append)
            result = await asyncio.wait_for(agent.run("list them", history=long_history(),
                                                    raise_on_error=False), 30)
            return result, events

        async def consume() -> list[Event]:
            return [e async for e in agent.stream("list them", history=long_history())]

        events = await asyncio.wait_for(consume(), 30)  # a hang fails here, not forever
        terminal = events[-1]
        assert terminal.type in ("done", "error", "cancelled")
        return terminal.result, events  # type: ignore[union-attr]


async def test_the_scenario_reaches_every_plugin_hook() -> None:
    plugin = Faulty(None)
    result, _ = await run_with(plugin, streamed=False)
    assert result.stop_reason == "completed", result.error
    assert plugin.seen == set(HOOKS)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("hook", [h for h in HOOKS if h != "on_run_end"])
async def test_a_bug_in_any_plugin_hook_ends_the_run_with_an_error_event(
        hook: str, streamed: bool) -> None:
    result, events = await run_with(Faulty(hook), streamed=streamed)
    assert result.stop_reason == "error"
    assert result.error == f"unexpected TypeError: bug in {hook}"
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent) and terminal.message == result.error
    assert isinstance(terminal.exception, TypeError) and str(terminal.exception) == f"bug in {hook}"
    assert [e.type for e in events].count("error") == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_a_bug_in_on_run_end_is_reported_and_the_run_still_finishes(
        streamed: bool) -> None:
    result, events = await run_with(Faulty("on_run_end"), streamed=streamed)
    assert result.stop_reason == "completed"
    assert events[-1].type == "done"
    assert any(isinstance(e, StatusEvent) and e.kind == "plugin_error"
               and "bug in on_run_end" in e.message for e in events)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_an_adapter_meeting_an_unknown_shape_ends_stream_with_an_error(stream: bool) -> None:
    with FakeModelServer([UNKNOWN_SHAPE]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, stream=stream)

        async def consume() -> list[Event]:
            return [e async for e in agent.stream("hello")]

        events = await asyncio.wait_for(consume(), 30)
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert terminal.message.startswith("unexpected TypeError:")
    assert isinstance(terminal.exception, TypeError)


async def test_a_failing_callback_still_lets_the_stream_finish() -> None:
    def broken(event: Event) -> None:
        raise KeyError(event.type)

    with FakeModelServer([]) as server:  # the broken callback ends the run before a request
        agent = Agent("m", base_url=server.base_url, api_key="k", callbacks=[broken])

        async def consume() -> list[Event]:
            return [e async for e in agent.stream("hello")]

        events = await asyncio.wait_for(consume(), 30)
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].message == "unexpected KeyError: 'turn_start'"


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_the_cli_finishes_with_exit_1_on_an_unknown_shape(tmp_path: Path,
                                                           json_output: bool) -> None:
    with FakeModelServer([UNKNOWN_SHAPE]) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "hello", "--model", "m", "--base-url",
             server.base_url, *(["--json"] if json_output else [])],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "unexpected TypeError" in proc.stderr.strip().splitlines()[-1]
    if json_output:
        last = event_from_dict(json.loads(proc.stdout.splitlines()[-1]))
        assert last.type == "error" and "unexpected TypeError" in last.message
