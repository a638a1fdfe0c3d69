"""A failing summariser is remembered: after a summary call fails (after its retries), the
compactions of the next `summary_cooldown` seconds use the report built from the record at once,
without asking the summary model again — in the same run and in the agent's next runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopwright import Agent, tool
from loopwright.context.summary import SUMMARY_SYSTEM, SummaryCooldown
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)  # 6 attempts, as the default policy


@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\n" for n in range(60))  # ~3,500 chars


def is_summary_call(request: RecordedRequest) -> bool:
    return request.body["messages"][0]["content"] == SUMMARY_SYSTEM


class DeadSummariser:
    """Every summary call fails with a retryable 503; the agent's calls dump `parts` parts per
    run, then answer."""

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.summary_requests = 0
        self.calls_this_run = 0

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        if is_summary_call(request):
            self.summary_requests += 1
            return Fault.status(503, {"error": {"message": "summariser is down"}})
        if self.calls_this_run < self.parts:
            self.calls_this_run += 1
            return Reply(tool_calls=[call("dump", {"part": self.calls_this_run})])
        self.calls_this_run = 0
        return Reply("all done")


def compactions(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if isinstance(e, StatusEvent) and e.kind == "compacted"]


def make_agent(server: FakeModelServer, tmp_path: Path, events: list[Event],
               **options: Any) -> Agent:
    return Agent("m", base_url=server.base_url, api_key="k", tools=[dump], retry=FAST,
                 context_window=4_096, cache_dir=str(tmp_path), max_turns=60,
                 callbacks=[events.append], **options)


async def test_after_a_failed_summary_the_next_compactions_ask_no_summary_model(
        tmp_path: Path) -> None:
    handler = DeadSummariser(parts=20)
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        agent = make_agent(server, tmp_path, events)
        first = await agent.run("collect every part")
        in_first_run = handler.summary_requests
        second = await agent.run("collect them again", history=first.messages)
    assert first.stop_reason == second.stop_reason == "completed"
    done = compactions(events)
    assert len(done) >= 3 and all(c["fallback"] for c in done)
    # the first compaction paid the retry policy once; none after it asked again
    assert in_first_run == handler.summary_requests == FAST.attempts
    assert "summariser is down" in done[0]["error"]
    assert all("not asked again for 300s" in c["error"] for c in done[1:])


async def test_with_no_cooldown_every_compaction_asks_the_summary_model(tmp_path: Path) -> None:
    handler = DeadSummariser(parts=30)  # the compact prompt of a 4k window leaves more room
    events: list[Event] = []
    with FakeModelServer(handler=handler) as server:
        result = await make_agent(server, tmp_path, events, summary_cooldown=0).run("collect")
    assert result.stop_reason == "completed"
    assert handler.summary_requests == FAST.attempts * len(compactions(events)) > FAST.attempts


def test_the_cooldown_ends_and_a_success_clears_it() -> None:
    now = [1000.0]
    cooldown = SummaryCooldown(300, clock=lambda: now[0])
    assert cooldown.cooling() is None
    cooldown.failed("HTTP 503")
    now[0] += 299
    assert cooldown.cooling() is not None and "HTTP 503" in (cooldown.cooling() or "")
    now[0] += 1
    assert cooldown.cooling() is None  # ask again: it may be back
    cooldown.failed("HTTP 503")
    cooldown.succeeded()
    assert cooldown.cooling() is None
