"""Pruning then compaction (DESIGN §1 step 6, §7): long runs in a small window stay valid."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from loopwright import Agent, tool
from loopwright.context.compaction import shrink_arguments, stub_for, tail_start
from loopwright.context.summary import SUMMARY_HEADER, SUMMARY_SYSTEM
from loopwright.context.tokens import estimate_text
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent, TurnStart
from loopwright.messages import Message, ToolCall, assistant, tool_result, user
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call
from loopwright.tools.output import SPILL_MARKER

FAST = RetryPolicy(base_delay=0.01, jitter=0)
WINDOW = 4_096
TASK = "TASK-7f3a: collect every part and report how many there were."
REPORT = "## Goal\nCollect the parts.\n## Done\nParts collected so far.\n## Next steps\nMore."


@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\n" for n in range(60))  # ~3,500 chars


@tool
def save(text: str) -> str:
    """Save a text."""
    return f"saved {len(text)} characters"


def is_summary_call(request: RecordedRequest) -> bool:
    first = request.body["messages"][0]
    return first["role"] == "system" and first["content"] == SUMMARY_SYSTEM


def scripted(calls: list[Any], *, summary: ScriptItem | None = None) -> Any:
    """A handler: summary calls get `summary` (default: a report); other calls get the next item
    of `calls`, then a final answer."""
    queue = list(calls)

    def answer(request: RecordedRequest) -> ScriptItem:
        if is_summary_call(request):
            return summary or Reply(REPORT)
        return queue.pop(0) if queue else Reply(text="all done")

    return answer


def estimate_body(body: dict[str, Any]) -> int:
    """Our estimator applied to what went over the wire (chat completions)."""
    total = estimate_text(json.dumps(body.get("tools") or []))
    for message in body["messages"]:
        total += 4 + estimate_text(message.get("content") or "")
        for c in message.get("tool_calls") or []:
            total += 8 + estimate_text(c["function"]["name"] + c["function"]["arguments"])
    return total


def assert_calls_and_results_pair_up(messages: list[dict[str, Any]]) -> None:
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, "a result without its call"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, "a call without its result"
        for c in message.get("tool_calls") or []:
            json.loads(c["function"]["arguments"])  # never cut into invalid JSON
            pending.add(c["id"])
    assert not pending


async def run_long(tmp_path: Path, handler: Any, tools: list[Any], *, prompt: str = TASK,
                   history: list[Message] | None = None, **options: Any
                   ) -> tuple[Any, list[RecordedRequest], list[Event]]:
    events: list[Event] = []
    options.setdefault("context_window", WINDOW)
    with FakeModelServer(handler=handler) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=tools, retry=FAST,
                      cache_dir=str(tmp_path), workdir=str(tmp_path), max_turns=60,
                      callbacks=[events.append], session_id="root-session", **options)
        result = await agent.run(prompt, history=history)
    return result, server.model_requests, events


def statuses(events: list[Event], kind: str) -> list[tuple[int, StatusEvent]]:
    turn, out = 0, []
    for event in events:
        if isinstance(event, TurnStart):
            turn = event.turn
        elif isinstance(event, StatusEvent) and event.kind == kind:
            out.append((turn, event))
    return out


async def test_a_long_run_in_a_small_window_completes_with_every_request_valid(
        tmp_path: Path) -> None:
    handler = scripted([Reply(tool_calls=[call("dump", {"part": n})]) for n in range(30)])
    result, requests, events = await run_long(tmp_path, handler, [dump])
    assert result.stop_reason == "completed" and result.output == "all done"
    agent_requests = [r for r in requests if not is_summary_call(r)]
    assert len(agent_requests) == 31
    for request in requests:
        assert estimate_body(request.body) < WINDOW
        assert_calls_and_results_pair_up(request.body["messages"][1:])
    for request in agent_requests:
        assert TASK in json.dumps(request.body["messages"])
    assert statuses(events, "pruned") and statuses(events, "compacted")
    compacted_turns = [turn for turn, _ in statuses(events, "compacted")]
    assert all(b - a > 1 for a, b in itertools.pairwise(compacted_turns))


async def test_compaction_keeps_the_session_id(tmp_path: Path) -> None:
    handler = scripted([Reply(tool_calls=[call("dump", {"part": n})]) for n in range(30)])
    result, _requests, events = await run_long(tmp_path, handler, [dump])
    compactions = [e.data for _, e in statuses(events, "compacted")]
    assert compactions and all(c["session_id"] == "root-session" for c in compactions)
    assert result.session_id == "root-session"  # the id the user holds is the newest state
    summary = [m for m in result.messages if m.content.startswith(SUMMARY_HEADER)]
    assert len(summary) == 1 and "reference material" in summary[0].content
    assert REPORT in summary[0].content
    assert result.messages[0].role == "system" and result.messages[1].content == TASK


async def test_a_failed_summary_falls_back_to_a_report_built_from_the_record(
        tmp_path: Path) -> None:
    handler = scripted([Reply(tool_calls=[call("dump", {"part": n})]) for n in range(20)],
                       summary=Fault.status(400, {"error": {"message": "no summaries today"}}))
    result, requests, events = await run_long(tmp_path, handler, [dump])
    assert result.stop_reason == "completed"
    compacted = statuses(events, "compacted")
    assert compacted and all(e.data["fallback"] for _, e in compacted)
    after = [r for r in requests if not is_summary_call(r)][-1]
    text = json.dumps(after.body["messages"])
    assert "Built from the record" in text and "no summaries today" in text
    assert "dump" in text  # the calls made are listed, not silently lost


async def test_the_task_and_the_latest_request_survive_compaction_verbatim(
        tmp_path: Path) -> None:
    original = "ORIGINAL-TASK: translate the whole manual into French."
    history = [user(original)]
    for n in range(12):
        history += [assistant(f"Chapter {n} translated. " + "la la " * 150),
                    user(f"follow-up {n}: go on")]
    history.append(assistant("Done with the chapters."))
    latest = "LATEST-ASK: now list the chapters you translated."
    handler = scripted([])
    result, requests, _events = await run_long(tmp_path, handler, [], prompt=latest,
                                              history=history)
    assert result.stop_reason == "completed"
    assert is_summary_call(requests[0])
    summary_input = requests[0].body["messages"][1]["content"]
    assert "Chapter 0 translated" in summary_input and estimate_body(requests[0].body) < WINDOW
    sent = json.dumps(requests[1].body["messages"], ensure_ascii=False)
    assert original in sent and latest in sent and SUMMARY_HEADER in sent
    assert "Chapter 3 translated" not in sent
    assert estimate_body(requests[1].body) < WINDOW


async def test_pruning_alone_is_tried_first_and_keeps_argument_json_valid(
        tmp_path: Path) -> None:
    payload = "lorem ipsum " * 300
    calls = [Reply(tool_calls=[call("save", {"text": f"{n} {payload}"})]) for n in range(6)]
    result, requests, events = await run_long(tmp_path, scripted(calls), [save],
                                              context_window=8_192)
    assert result.stop_reason == "completed"
    assert statuses(events, "pruned") and not statuses(events, "compacted")
    last = requests[-1].body["messages"]
    assert_calls_and_results_pair_up(last[1:])
    first_call = next(m for m in last if m.get("tool_calls"))
    arguments = json.loads(first_call["tool_calls"][0]["function"]["arguments"])
    assert "characters pruned" in arguments["text"]


async def test_compaction_can_be_switched_off(tmp_path: Path) -> None:
    handler = scripted([Reply(tool_calls=[call("dump", {"part": n})]) for n in range(4)])
    result, requests, events = await run_long(tmp_path, handler, [dump], compaction=False,
                                              context_window=8_192)
    assert result.stop_reason == "completed"
    assert not statuses(events, "pruned") and not statuses(events, "compacted")
    assert not any(is_summary_call(r) for r in requests)


def test_the_tail_never_begins_on_a_tool_result() -> None:
    calls = [ToolCall(id=f"c{n}", name="t") for n in range(3)]
    history = [Message(role="system", content="s"), user("task"), assistant(tool_calls=calls),
               *[tool_result(c, "r" * 400) for c in calls]]
    start = tail_start(history, 150)
    assert history[start].role == "assistant" and history[start].tool_calls


def test_shrunk_arguments_stay_valid_json() -> None:
    raw = json.dumps({"path": "a.txt", "content": "z" * 5_000, "nested": [{"v": "y" * 900}]})
    shrunk = json.loads(shrink_arguments(raw))
    assert shrunk["path"] == "a.txt" and len(shrunk["content"]) < 400
    assert "characters pruned" in shrunk["nested"][0]["v"]
    assert json.loads(shrink_arguments('{"broken": "' + "q" * 2_000))


def test_a_stub_keeps_the_path_of_a_spilled_output() -> None:
    preview = f"[Output too long … {SPILL_MARKER}/tmp/spill/x.txt — read it]\n" + "a" * 900
    spilled = tool_result(ToolCall(id="c", name="grep"), preview)
    stub = stub_for(spilled)
    assert "/tmp/spill/x.txt" in stub.content and len(stub.content) < 300
    assert stub.tool_call_id == "c"


@tool(read_only=True)
def chunk(part: int) -> str:
    """Return just under the output cap of a 4,096-token window."""
    return f"chunk {part} begins\n" + "y" * 3_900 + f"\nchunk {part} ends"


async def test_an_exchange_too_big_for_the_window_is_cut_with_its_text_spilled(
        tmp_path: Path) -> None:
    batch = Reply(tool_calls=[call("chunk", {"part": n}) for n in range(4)])
    result, requests, events = await run_long(tmp_path, scripted([batch]), [chunk])
    assert result.stop_reason == "completed"
    assert statuses(events, "context_trimmed")
    last = requests[-1].body
    assert estimate_body(last) < WINDOW
    assert_calls_and_results_pair_up(last["messages"][1:])
    results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert len(results) == 4 and all(SPILL_MARKER in r for r in results)
    [session] = (tmp_path / "spill").glob("s-*")  # the run's session's own directory
    spilled = sorted(session.iterdir())
    assert len(spilled) == 4
    assert {p.read_text().splitlines()[0] for p in spilled} == {
        f"chunk {n} begins" for n in range(4)}


async def test_a_provider_overflow_error_teaches_the_real_window_and_the_call_is_retried(
        tmp_path: Path) -> None:
    queue = [Reply(tool_calls=[call("dump", {"part": n})]) for n in range(6)]
    message = "This model's maximum context length is 2048 tokens. However, you requested more."
    too_long = Fault.status(400, {"error": {"message": message}})

    def handler(request: RecordedRequest) -> ScriptItem:
        if len(request.raw_body) // 4 > 2_048:
            return too_long
        if is_summary_call(request):
            return Reply(REPORT)
        return queue.pop(0) if queue else Reply(text="all done")

    result, _requests, events = await run_long(tmp_path, handler, [dump], context_window=32_000)
    assert result.stop_reason == "completed" and result.output == "all done"
    [(_, learned)] = statuses(events, "context_window")
    assert learned.data["window"] == 2_048


async def test_the_summary_calls_usage_is_counted_in_its_turn(tmp_path: Path) -> None:
    handler = scripted([Reply(tool_calls=[call("dump", {"part": n})]) for n in range(14)])
    result, requests, events = await run_long(tmp_path, handler, [dump])
    [(turn, _), *_] = statuses(events, "compacted")
    ends = {e.turn: e.usage for e in events if e.type == "turn_end"}  # type: ignore[union-attr]
    assert ends[turn]["requests"] == 2 and ends[turn - 1]["requests"] == 1
    assert result.usage.requests == len(requests)
