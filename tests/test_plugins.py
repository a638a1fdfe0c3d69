"""The plugin seam: hooks run in the one numbered order of `loop.py`, each run is served by the
object a plugin's `for_run()` returns, and plugins keep nothing of their own in the tools'
shared state."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.grading import GRADER_PROMPT
from loopwright.messages import Message, ModelRequest, ModelResponse
from loopwright.plugins import LoopPlugin, RunView
from loopwright.result import RunResult
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call
from loopwright.tools.base import ToolContext
from loopwright.wire.stream import DeltaListener

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Tracer(LoopPlugin):
    """Writes `name:hook` to a shared log for every hook it sees."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def _see(self, hook: str) -> None:
        self.log.append(f"{self.name}:{hook}")

    def for_run(self, run: RunView) -> LoopPlugin:
        self._see("for_run")
        return self

    async def on_run_start(self, run: RunView) -> None:
        self._see("on_run_start")

    def on_message(self, run: RunView, message: Message) -> None:
        self._see(f"on_message({message.role})")

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        self._see("before_model")

    def text_filter(self, run: RunView, listener: DeltaListener) -> DeltaListener:
        self._see("text_filter")
        return listener

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        self._see("after_model")

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        self._see("on_answer")
        return None

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        self._see("on_run_end")


async def test_hooks_run_in_the_numbered_lifecycle_order() -> None:
    log: list[str] = []
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 2})]), Reply("3")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[add], retry=FAST,
                      plugins=[Tracer("A", log), Tracer("B", log)])
        result = await agent.run("1+2?")
    assert result.output == "3"
    turn = ["A:before_model", "B:before_model", "A:text_filter", "B:text_filter",
            "B:after_model", "A:after_model", "A:on_message(assistant)",
            "B:on_message(assistant)"]
    assert log == [
        "A:for_run", "B:for_run",  # 1
        "A:on_message(user)", "B:on_message(user)",  # 2
        "A:on_run_start", "B:on_run_start",  # 3
        *turn, "A:on_message(tool)", "B:on_message(tool)",  # 8-11, 15
        *turn,
        "B:on_answer", "A:on_answer",  # 16: inside-out
        "A:on_run_end", "B:on_run_end",  # 17
    ]


class Counting(LoopPlugin):
    """Per-run state the `for_run()` way: each run counts its own messages."""

    def __init__(self) -> None:
        self.served: list[Counting] = []
        self.messages: list[str] = []

    def for_run(self, run: RunView) -> LoopPlugin:
        own = Counting()
        self.served.append(own)
        return own

    def on_message(self, run: RunView, message: Message) -> None:
        self.messages.append(message.content)


async def test_each_run_gets_its_own_plugin_object_even_when_runs_overlap() -> None:
    release = threading.Event()  # the server answers on its own thread

    async def handler(request: RecordedRequest) -> ScriptItem:
        await asyncio.to_thread(release.wait, 30)
        last = request.body["messages"][-1]["content"]
        return Reply(f"answer to {last}")

    plugin = Counting()
    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, plugins=[plugin])
        first = asyncio.ensure_future(agent.run("one"))
        second = asyncio.ensure_future(agent.run("two"))
        await asyncio.sleep(0.2)
        release.set()
        results = await asyncio.wait_for(asyncio.gather(first, second), 30)
    assert [r.output for r in results] == ["answer to one", "answer to two"]
    assert len(plugin.served) == 2 and not plugin.messages
    assert sorted(own.messages for own in plugin.served) == [
        ["one", "answer to one"], ["two", "answer to two"]]


async def test_plugins_keep_nothing_of_their_own_in_the_tools_state() -> None:
    seen: list[list[str]] = []

    @tool
    def peek(ctx: ToolContext) -> str:
        """Report what the tools' shared state holds."""
        seen.append(sorted(ctx.state))
        return "ok"

    def handler(request: RecordedRequest) -> ScriptItem:
        sent = request.body["messages"]
        if sent[0]["content"] == GRADER_PROMPT:
            return Reply('{"verdict": "satisfied", "feedback": ""}')
        results = sum(1 for m in sent if m["role"] == "tool")
        if results == 1 and "You said you would use a tool" not in str(sent[-1]["content"]):
            return Reply("Let me check it once more.")  # narrated: nudged once
        return Reply(tool_calls=[call("peek")]) if results < 2 else Reply("Done.")

    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[peek], retry=FAST,
                      rubric="Any answer will do.", review=["auto", "narration"])
        result = await agent.run("look")
    assert result.stop_reason == "completed" and result.output == "Done."
    assert result.grade is not None and result.grade["graded"]
    assert seen == [[], []]


class Narrow(LoopPlugin):
    """Reads the run only through its view."""

    def __init__(self) -> None:
        self.views: list[dict[str, Any]] = []

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        self.views.append({"turn": run.turn, "history": len(run.history), "model": run.model,
                           "requests": run.usage.requests, "cost": run.cost,
                           "session_id": run.session_id, "max_turns": run.settings.max_turns})


async def test_the_view_reports_the_run_as_the_result_does() -> None:
    narrow = Narrow()
    with FakeModelServer(replies=[Reply("hi")]) as server:
        agent = Agent("gpt-4o-mini", base_url=server.base_url, api_key="k", retry=FAST,
                      plugins=[narrow], max_turns=7)
        result = await agent.run("hello")
    assert narrow.views == [{"turn": 1, "history": 3, "model": "gpt-4o-mini", "requests": 1,
                             "cost": result.cost, "session_id": result.session_id,
                             "max_turns": 7}]
    assert result.cost is not None and result.cost > 0


class OnlyAfterTools(LoopPlugin):
    """Overrides one hook: the loop calls only the hooks a plugin overrides."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def after_tools(self, run: RunView) -> None:
        self.log.append("after_tools")


class OnlyAfterToolsAndResults(OnlyAfterTools):
    async def on_results(self, run: RunView, results: list[Message]) -> None:
        self.log.append(f"on_results({len(results)})")


async def test_a_hook_overridden_in_a_subclass_or_set_on_the_object_is_called() -> None:
    log: list[str] = []
    on_object = LoopPlugin()
    on_object.on_message = lambda run, message: log.append(  # type: ignore[method-assign]
        f"on_message({message.role})")
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 2})]), Reply("3")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[add], retry=FAST,
                      plugins=[OnlyAfterToolsAndResults(log), on_object])
        result = await agent.run("1+2?")
    assert result.output == "3"
    assert log == ["on_message(user)", "on_message(assistant)", "on_message(tool)",
                   "on_results(1)", "after_tools", "on_message(assistant)"]


async def test_a_hook_set_on_an_object_is_called_after_a_run_of_its_plain_class() -> None:
    # which hooks a class overrides is looked up once per class: an object's own hook is still
    # read from the object, in a run after one whose object of that class had none
    log: list[str] = []

    async def after_tools(run: RunView) -> None:
        log.append("after_tools")

    on_object = LoopPlugin()
    on_object.after_tools = after_tools  # type: ignore[method-assign]
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 2})]), Reply("3")] * 2
    with FakeModelServer(replies=script) as server:
        for plugin in (LoopPlugin(), on_object):
            agent = Agent("m", base_url=server.base_url, api_key="k", tools=[add], retry=FAST,
                          plugins=[plugin])
            assert (await agent.run("1+2?")).output == "3"
    assert log == ["after_tools"]
