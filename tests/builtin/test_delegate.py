"""Sub-agents (builtin/delegate.py) through `Agent` against the fake model server.

The server answers with a handler that tells parent from child by the system prompt and children
apart by their task, so concurrent conversations get the right replies in any order.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from loopwright import Agent, ToolContext, notes, tool
from loopwright.budget import IterationBudget
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call
from shared_helpers import wait_until

FAST = RetryPolicy(base_delay=0.01, jitter=0)
CHILD_MARK = CHILD_PROMPT.splitlines()[0]


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def note(text: str) -> str:
    """Write a note."""
    return f"noted: {text}"


class Convo:
    """What one model request is part of: parent or child, the task, how far along it is."""

    def __init__(self, request: RecordedRequest) -> None:
        body = request.body
        self.messages: list[dict[str, Any]] = body["messages"]
        self.system = self.messages[0]["content"] if self.messages[0]["role"] == "system" else ""
        self.child = CHILD_MARK in self.system
        self.task = next(m["content"] for m in self.messages if m["role"] == "user")
        self.step = sum(1 for m in self.messages if m["role"] == "assistant")
        self.tools = [t["function"]["name"] for t in body.get("tools") or []]
        self.tool_choice = body.get("tool_choice")
        self.model = body.get("model")

    def tool_results(self) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == "tool"]


def make_agent(server: FakeModelServer, tools: list[Any], **kwargs: Any) -> Agent:
    kwargs.setdefault("retry", FAST)
    return Agent("test-model", base_url=server.base_url, api_key="k", tools=tools, **kwargs)


def scripted(parent: list[ScriptItem], children: dict[str, list[ScriptItem]],
             seen: list[Convo] | None = None) -> Callable[[RecordedRequest], ScriptItem]:
    """A handler: the parent's replies by step, each child's by task and step."""

    def handle(request: RecordedRequest) -> ScriptItem:
        convo = Convo(request)
        if seen is not None:
            seen.append(convo)
        script = children[convo.task] if convo.child else parent
        return script[convo.step] if convo.step < len(script) else Reply("(script ended)")

    return handle


async def test_a_delegation_returns_the_childs_answer_with_a_summary() -> None:
    seen: list[Convo] = []
    handler = scripted(
        parent=[Reply(tool_calls=[call("delegate", {"task": "add 2 and 3", "tools": ["add"]})]),
                Reply("The sub-agent says 5.")],
        children={"add 2 and 3": [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]),
                                  Reply("2 + 3 = 5")]},
        seen=seen)
    budget = IterationBudget(total=90)
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [add, note, make_delegate_tool()])
        handle = await agent.start("delegate the sum", budget=budget)
        result = await handle.task
    assert result.stop_reason == "completed"
    assert result.output == "The sub-agent says 5."
    report = seen[-1].tool_results()[0]
    assert "completed after 2 turn(s); tools used: add]" in report
    assert report.endswith("2 + 3 = 5")
    child_requests = [c for c in seen if c.child]
    assert len(child_requests) == 2
    # the child gets exactly the tools it was given, plus its own depth-bound delegate tool
    assert child_requests[0].tools == ["add", "delegate"]
    assert budget.used == 4  # parent 2 + child 2: one budget for the whole tree
    assert result.usage.requests == 4  # the parent's usage includes its child's


async def test_child_events_are_tagged_and_do_not_end_the_parent_stream() -> None:
    handler = scripted(
        parent=[Reply(tool_calls=[call("delegate", {"task": "say hi"})]), Reply("done")],
        children={"say hi": [Reply("hi from the child")]})
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [make_delegate_tool()])
        async for event in agent.stream("go"):
            events.append(event)
    child_events = [e for e in events if e.agent]
    assert child_events, "child events are forwarded into the parent's stream"
    child_id = child_events[0].agent
    assert child_id.startswith("sub-")
    assert {e.type for e in child_events} >= {"turn_start", "text_delta", "turn_end", "done"}
    assert all(e.agent == child_id for e in child_events)
    # the child's terminal event came first and did not end the stream: the parent's did
    assert events[-1].type == "done" and not events[-1].agent
    texts = "".join(e.text for e in events if e.type == "text_delta" and not e.agent)
    assert texts == "done"


async def test_several_delegations_in_one_turn_run_concurrently() -> None:
    arrived: dict[str, asyncio.Event] = {}

    async def handler(request: RecordedRequest) -> ScriptItem:
        convo = Convo(request)
        if not convo.child:
            if convo.step == 0:
                return Reply(tool_calls=[call("delegate", {"task": "task A"}),
                                         call("delegate", {"task": "task B"})])
            return Reply("both done: " + " | ".join(convo.tool_results()))
        arrived.setdefault(convo.task, asyncio.Event()).set()
        other = "task B" if convo.task == "task A" else "task A"
        try:  # both children must be waiting on the model at once, or this never completes
            await asyncio.wait_for(arrived.setdefault(other, asyncio.Event()).wait(), 10)
        except TimeoutError:
            return Reply(f"{convo.task} ran alone")
        return Reply(f"{convo.task} finished alongside {other}")

    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [make_delegate_tool()])
        result = await agent.run("do A and B")
    assert "task A finished alongside task B" in result.output
    assert "task B finished alongside task A" in result.output
    assert "ran alone" not in result.output


@tool
async def wait_forever(ctx: ToolContext) -> str:
    """Wait for something that never comes."""
    await asyncio.sleep(3600)
    return "unreachable"


async def test_a_child_that_times_out_reports_its_partial_work() -> None:
    handler = scripted(
        parent=[Reply(tool_calls=[call("delegate", {"task": "investigate"})]),
                Reply("the sub-agent timed out")],
        children={"investigate": [
            Reply(tool_calls=[call("note", {"text": "clue A"})]),
            Reply("Found clue A, now waiting for B.", tool_calls=[call("wait_forever")]),
        ]})
    seen_results: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [note, wait_forever, make_delegate_tool(timeout=0.5)],
                           callbacks=[seen_results.append])
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    delegate_result = next(e for e in seen_results
                           if e.type == "tool_result" and e.name == "delegate" and not e.agent)
    assert delegate_result.is_error
    assert "timed out after 0.5s" in delegate_result.content
    assert "Found clue A, now waiting for B." in delegate_result.content
    assert "noted: clue A" in delegate_result.content


async def test_a_failing_child_tells_the_parent_why() -> None:
    def handler(request: RecordedRequest) -> ScriptItem:
        convo = Convo(request)
        if convo.child:
            return Fault.status(400, body={"error": {"message": "model not allowed"}})
        if convo.step == 0:
            return Reply(tool_calls=[call("delegate", {"task": "anything"})])
        return Reply("handled: " + convo.tool_results()[0])

    with FakeModelServer(handler=handler) as server:
        result = await make_agent(server, [make_delegate_tool()]).run("go")
    assert result.stop_reason == "completed"
    assert result.output.startswith("handled: Error: [sub-agent sub-")
    assert ": error after" in result.output
    assert "400" in result.output


async def test_depth_is_limited_and_the_deepest_child_is_not_offered_delegate() -> None:
    seen: list[Convo] = []

    def handler(request: RecordedRequest) -> ScriptItem:
        convo = Convo(request)
        seen.append(convo)
        if convo.step > 0:
            return Reply(f"finished {convo.task}")
        if not convo.child:
            return Reply(tool_calls=[call("delegate", {"task": "level 1"})])
        if convo.task == "level 1":
            return Reply(tool_calls=[call("delegate", {"task": "level 2"})])
        return Reply("level 2 here")

    with FakeModelServer(handler=handler) as server:
        result = await make_agent(server, [add, make_delegate_tool()]).run("go")
    assert result.stop_reason == "completed"
    tools_by_task = {c.task: c.tools for c in seen if c.step == 0}
    assert tools_by_task["go"] == ["add", "delegate"]
    assert tools_by_task["level 1"] == ["add", "delegate"]
    assert tools_by_task["level 2"] == ["add"]  # depth 2 reached: not offered


async def test_an_agent_at_the_depth_limit_gets_a_clear_error() -> None:
    script = [Reply(tool_calls=[call("delegate", {"task": "x"})]), Reply("ok")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, [make_delegate_tool(max_depth=0)]).run("go")
        results = [m for m in result.messages if m.role == "tool"]
    assert results[0].is_error
    assert "depth limit (0) is reached" in results[0].content


async def test_cancelling_the_parent_cancels_its_children() -> None:
    started = threading.Event()
    cancelled: list[bool] = []

    @tool
    async def block(ctx: ToolContext) -> str:
        """Block until cancelled."""
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "unreachable"

    handler = scripted(
        parent=[Reply(tool_calls=[call("delegate", {"task": "block"})])],
        children={"block": [Reply(tool_calls=[call("block")])]})
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [block, make_delegate_tool()], callbacks=[events.append])
        handle = await agent.start("go")
        await wait_until(started.is_set, "the child's tool started")
        handle.cancel()
        result = await handle.task
    assert result.stop_reason == "cancelled"
    assert cancelled == [True]
    child_terminal = [e for e in events if e.agent and e.type in ("done", "cancelled", "error")]
    assert [e.type for e in child_terminal] == ["cancelled"]


async def test_children_share_the_budget_warning_at_70_percent_and_stop_at_100() -> None:
    seen: list[Convo] = []
    handler = scripted(
        parent=[Reply(tool_calls=[call("delegate", {"task": "long job"})]),
                # the summary call forbids tools; calls it makes anyway are ignored
                Reply("Summary: the child added numbers.",
                      tool_calls=[call("add", {"a": 1, "b": 1})])],
        children={"long job": [Reply(tool_calls=[call("add", {"a": i, "b": 1})])
                               for i in range(10)]},
        seen=seen)
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [add, make_delegate_tool()], iteration_budget=4)
        result = await agent.run("go")
    assert result.stop_reason == "budget_exhausted"
    # parent 1 + child 3 iterations, then one tool-less summary call each
    summaries = [c for c in seen if c.messages[-1]["content"] == notes.text(notes.BUDGET_SUMMARY)]
    assert [c.child for c in summaries] == [True, False]
    # tool-less: tool calls are switched off (the definitions stay, as some APIs require them
    # while the history holds tool calls)
    assert all(c.tool_choice == "none" for c in summaries)
    assert len(seen) == 6
    # the 70 % warning reached both the child (its tool result) and the parent (the report)
    child_results = summaries[0].tool_results()
    assert any("[budget]" in r for r in child_results)
    parent_report = summaries[1].tool_results()[0]
    assert "budget_exhausted after" in parent_report and "[budget]" in parent_report
    assert result.output == "Summary: the child added numbers."


async def test_agent_delegate_runs_a_child_with_a_tool_subset_and_model() -> None:
    seen: list[Convo] = []
    handler = scripted(parent=[], children={"sum it": [
        Reply(tool_calls=[call("add", {"a": 4, "b": 4})]), Reply("8")]}, seen=seen)
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, [add, note], callbacks=[events.append])
        outcome = await agent.delegate("sum it", tools=["add"], model="small-model",
                                       instructions="Answer with a number only.")
    assert outcome.stop_reason == "completed" and not outcome.failed
    assert outcome.output == "8"
    assert outcome.tools_used == {"add": 1}
    assert {c.model for c in seen} == {"small-model"}
    assert seen[0].tools == ["add"]
    assert f"{CHILD_PROMPT}\n\nAnswer with a number only." in seen[0].system
    assert events and all(e.agent == outcome.child_id for e in events)


async def test_unknown_tool_names_are_reported_with_the_available_ones() -> None:
    script = [Reply(tool_calls=[call("delegate", {"task": "x", "tools": ["nope"]})]), Reply("ok")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, [add, make_delegate_tool()]).run("go")
    error = next(m for m in result.messages if m.role == "tool")
    assert error.is_error
    assert "unknown tool(s) for the sub-agent: nope" in error.content
    assert "add" in error.content


async def test_make_child_is_the_public_way_to_a_sub_agent() -> None:
    with FakeModelServer(replies=[Reply("parent"), Reply("child")]) as server:
        parent = make_agent(server, [add, note], max_turns=7)
        await parent.run("warm up")  # resolves the endpoint and probes the window once
        probed = [r.path for r in server.requests if r.format is None]
        seen = len(server.requests)
        child = parent.make_child(tools=[add], system_prompt="You are the child.")
        result = await child.run("go")
        later = [r.path for r in server.requests[seen:] if r.format is None]
    assert probed and later == []  # the parent's resolution and window are reused
    assert result.output == "child"
    assert child.settings.system_prompt == "You are the child."
    assert child.settings.max_turns == 7 and child.settings.rubric == ""
    assert [t.name for t in child.registry.visible()] == ["add"]
    assert await child.context_windows() == await parent.context_windows()
    other = parent.make_child(tools=[], system_prompt="x", model="anthropic:claude-x")
    assert other.settings.base_url is None and other.settings.model == "anthropic:claude-x"
