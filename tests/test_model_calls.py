"""One home for a model call: every call a run makes — a turn, the budget summary, a compaction
summary, a grade, a plugin's side call — adds its usage and cost to the run and emits one
`model_call` event whose `ModelCallRecord` holds the request, the response, the latency and the
attempts (retries and fallbacks counted)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from loopwright import Agent, event_from_dict, event_to_json, tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ModelCallEvent, ModelCallRecord
from loopwright.grading import GRADER_PROMPT
from loopwright.messages import Message, ModelRequest, assistant, system, user
from loopwright.plugins import LoopPlugin, RunView
from loopwright.testing import (
    FakeModelServer,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedUsage,
    ScriptItem,
    call,
)

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def records(events: list[Event]) -> list[ModelCallRecord]:
    return [e.record for e in events if isinstance(e, ModelCallEvent)]


def make_agent(server: FakeModelServer, events: list[Event], **options: Any) -> Agent:
    options.setdefault("retry", FAST)
    return Agent("test-model", base_url=server.base_url, api_key="k", tools=[add],
                 callbacks=[events.append], **options)


async def test_every_turn_records_its_request_response_latency_attempts_and_usage() -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("It is 5.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, events, stream=False).run("2+3?")
        base_url = server.base_url
    assert result.stop_reason == "completed"
    first, second = records(events)
    assert [first.purpose, second.purpose] == ["turn", "turn"]
    assert [first.turn, second.turn] == [1, 2]
    assert first.run_id == second.run_id and first.session_id == result.session_id
    assert first.attempts == 1 and not first.streamed and first.error is None
    assert 0 < first.latency < 30 and first.started > 1e9
    assert first.model == "test-model" and "test-model" in first.provider
    assert first.endpoint == base_url
    assert first.mode == "chat_completions"
    assert first.request["tools"] == ["add"] and first.request["messages"] == 2
    assert first.request["last_message"]["content"] == "2+3?"
    assert first.response is not None and first.response["finish_reason"] == "tool_calls"
    assert [c["name"] for c in first.response["tool_calls"]] == ["add"]
    assert second.request["last_message"]["role"] == "tool"
    assert second.response is not None and second.response["content"] == "It is 5."
    assert first.usage.requests == 1 and first.usage.input_tokens > 0
    total = first.usage.input_tokens + second.usage.input_tokens
    assert result.usage.input_tokens == total and result.usage.requests == 2


async def test_the_record_survives_the_json_form_of_its_event() -> None:
    events: list[Event] = []
    with FakeModelServer(replies=[Reply("hi")]) as server:
        await make_agent(server, events).run("hello")
    event = next(e for e in events if isinstance(e, ModelCallEvent))
    again = event_from_dict(json.loads(event_to_json(event)))
    assert again == event
    assert event.record.streamed  # streaming is the default


async def test_retries_count_as_attempts_of_one_call() -> None:
    events: list[Event] = []
    script: list[ScriptItem] = [Fault.overloaded(), Fault.overloaded(), Reply("ok")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, events, stream=False).run("go")
    assert result.output == "ok"
    (record,) = records(events)
    assert record.attempts == 3 and record.error is None


async def test_a_failed_call_is_recorded_with_its_error_and_no_response() -> None:
    events: list[Event] = []
    script: list[ScriptItem] = [Fault.status(500), Fault.status(500)]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, events, stream=False,
                                  retry=RetryPolicy(attempts=2, base_delay=0.01, jitter=0)
                                  ).run("go", raise_on_error=False)
    assert result.stop_reason == "error"
    (record,) = records(events)
    assert record.response is None and record.attempts == 2
    assert record.error and "HTTP 500" in record.error and record.status == 500


async def test_the_budget_summary_is_a_recorded_call() -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 1})]), Reply("Summary: 2.")]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, events, iteration_budget=1).run("go")
    assert result.stop_reason == "budget_exhausted"
    assert [r.purpose for r in records(events)] == ["turn", "summary"]
    assert result.usage.requests == 2


def long_history() -> list[Message]:
    history = [user("Translate the manual.")]
    for n in range(12):
        history += [assistant(f"Chapter {n} translated. " + "la la " * 150), user("go on")]
    return [*history, assistant("Done with the chapters.")]


async def test_a_compaction_summary_is_a_recorded_call_and_counted_in_usage() -> None:
    def handler(request: RecordedRequest) -> ScriptItem:
        if request.body["messages"][0].get("content") == SUMMARY_SYSTEM:
            return Reply("## Goal\nTranslate.")
        return Reply("All chapters are done.")

    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        result = await make_agent(server, events, context_window=4_096).run(
            "list them", history=long_history())
    assert result.stop_reason == "completed"
    compaction, answer = records(events)
    assert (compaction.purpose, answer.purpose) == ("compaction", "turn")
    assert compaction.response is not None and compaction.response["content"].startswith("## Goal")
    assert compaction.request["tools"] == [] and not compaction.streamed
    assert result.usage.requests == 2


async def test_grading_is_a_recorded_call() -> None:
    def handler(request: RecordedRequest) -> ScriptItem:
        if request.body["messages"][0].get("content") == GRADER_PROMPT:
            return Reply(json.dumps({"verdict": "satisfied", "feedback": "fine"}))
        return Reply("It is 5 km.")

    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        result = await make_agent(server, events, rubric="Give a distance.").run("How far?")
    assert result.grade is not None and result.grade["verdict"] == "satisfied"
    purposes = [r.purpose for r in records(events)]
    assert purposes == ["turn", "grading"]
    assert result.usage.requests == 2


class Critic(LoopPlugin):
    """Asks the model a side question once per answer, through the run's view."""

    def __init__(self) -> None:
        self.replies: list[str] = []

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        request = ModelRequest(model=run.model, messages=[system("critic"), user(answer)])
        response = await run.call_model(request, purpose="critic")
        self.replies.append(response.message.content)
        return None


async def test_a_plugin_side_call_is_silent_counted_and_recorded() -> None:
    def handler(request: RecordedRequest) -> ScriptItem:
        if request.body["messages"][0].get("content") == "critic":
            return Reply("CRITIC-SAYS-FINE")
        return Reply("The answer.")

    events: list[Event] = []
    critic = Critic()
    with FakeModelServer(handler=handler) as server:
        result = await make_agent(server, events, plugins=[critic]).run("question")
    assert critic.replies == ["CRITIC-SAYS-FINE"]
    assert result.output == "The answer." and result.usage.requests == 2
    assert [r.purpose for r in records(events)] == ["turn", "critic"]
    shown = "".join(e.text for e in events if e.type == "text_delta")
    assert "CRITIC" not in shown


async def test_a_cancelled_call_is_recorded_as_cancelled() -> None:
    # set on the fake server's own thread: an asyncio.Event of this loop would not wake it,
    # and the wait below sat out its whole 30 s guard on every run
    arrived = threading.Event()

    async def handler(request: RecordedRequest) -> ScriptItem:
        arrived.set()
        await asyncio.sleep(60)
        return Reply("too late")

    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, events)
        run = asyncio.ensure_future(agent.run("go"))
        assert await asyncio.to_thread(arrived.wait, 30)
        assert agent.cancel()
        result = await asyncio.wait_for(run, 20)
    assert result.stop_reason == "cancelled"
    (record,) = records(events)
    assert record.error == "cancelled" and record.response is None


async def test_a_pause_too_long_to_wait_still_reports_its_attempt() -> None:
    events: list[Event] = []
    script: list[ScriptItem] = [Fault.rate_limit(retry_after=3600)]
    with FakeModelServer(replies=script) as server:
        result = await make_agent(server, events, stream=False).run("go", raise_on_error=False)
    assert result.stop_reason == "error"
    (record,) = records(events)
    assert record.attempts == 1 and record.status == 429
    assert record.error and "wait" in record.error


async def test_a_run_nobody_listens_to_builds_no_records_yet_counts_usage_and_cost(
        monkeypatch: Any) -> None:
    """Without a callback (a library user's `agent.run()`), no event of the run's turns, calls
    and tools is made: nothing would read it. Usage, cost and turns are counted all the same."""
    import loopwright.loop
    import loopwright.model_call

    built: list[str] = []

    def counting(name: str, make: Any) -> Any:  # the loop makes them with events.maker's
        def counted(**fields: Any) -> Any:
            built.append(name)
            return make(**fields)
        return counted

    monkeypatch.setattr(loopwright.model_call, "new_call_record",
                        counting("ModelCallRecord", loopwright.model_call.new_call_record))
    for name, cls in (("new_turn_start", "TurnStart"), ("new_turn_end", "TurnEnd"),
                      ("new_tool_call", "ToolCallEvent"), ("new_tool_result", "ToolResultEvent")):
        monkeypatch.setattr(loopwright.loop, name, counting(cls, getattr(loopwright.loop, name)))
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})],
                    usage=ScriptedUsage(input_tokens=10, output_tokens=5)),
              Reply("It is 5.", usage=ScriptedUsage(input_tokens=20, output_tokens=3))]
    with FakeModelServer(replies=script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", tools=[add],
                      retry=FAST, stream=False)
        result = await agent.run("2+3?")
        await agent.aclose()
    assert result.stop_reason == "completed" and result.turns == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 8)
    assert result.usage.requests == 2
    assert built == []
    events: list[Event] = []  # the same run with a listener: every one of them is made
    with FakeModelServer(replies=list(script)) as server:
        agent = make_agent(server, events, stream=False)
        await agent.run("2+3?")
        await agent.aclose()
    assert sorted(set(built)) == ["ModelCallRecord", "ToolCallEvent", "ToolResultEvent",
                                  "TurnEnd", "TurnStart"]
    assert [e.type for e in events if e.type in ("turn_start", "model_call")] == [
        "turn_start", "model_call", "turn_start", "model_call"]


async def test_a_store_without_callbacks_still_gets_every_calls_record(tmp_path: Any) -> None:
    """The session recorder listens too: with a store and no callback of the user's, each model
    call's record is still made and stored."""
    from loopwright.store import open_store

    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("It is 5.")]
    spec = str(tmp_path / "sessions.db")
    with FakeModelServer(replies=script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", tools=[add],
                      retry=FAST, stream=False, store=spec)
        result = await agent.run("2+3?")
        await agent.aclose()
    store = open_store(spec)
    assert store is not None and result.session_id
    try:
        stored = await store.model_calls(result.session_id)  # type: ignore[attr-defined]
    finally:
        await store.aclose()  # type: ignore[attr-defined]
    assert [(r.purpose, r.turn) for r in stored] == [("turn", 1), ("turn", 2)]
