"""Every event the session store gives back (`store.events()`: its `run_id` and `created` added,
a `model_call` record without its request and response, a `tool_result` kept as a preview, a
result with its messages counted) reads back through `event_from_dict`, on both stores."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.test_events import _samples

from loopwright import Agent, event_from_dict, event_to_dict, tool
from loopwright.events import Event
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply, call


async def test_every_event_type_written_to_the_store_reads_back_equal(store_spec: str) -> None:
    store = open_store(store_spec)
    assert store is not None
    written = _samples("delegate:1")
    try:
        await store.create("s1")
        await store.record_events("s1", "run-1", [event_to_dict(e) for e in written])
        stored: list[dict[str, Any]] = await store.events("s1")  # type: ignore[attr-defined]
        whole_records = await store.model_calls("s1")  # type: ignore[attr-defined]
    finally:
        await store.aclose()  # type: ignore[attr-defined]
    assert {(row["run_id"], type(row["created"])) for row in stored} == {("run-1", float)}
    read = [event_from_dict(row) for row in stored]
    assert [event_to_dict(e) for e in read] == [as_the_log_keeps_it(e) for e in written]
    for event, again in zip(written, read, strict=True):
        if event.type != "partial_output":  # its JSON form holds the JSON, not the instance
            assert again == as_the_log_gives_it(event), event.type
    assert whole_records == [e.record for e in written if e.type == "model_call"]


def as_the_log_gives_it(event: Event) -> Event:
    """The event as the store's log gives it back: a record without its request and response
    (`store.model_calls()` has them)."""
    if event.type != "model_call":
        return event
    return dataclasses.replace(event, record=dataclasses.replace(
        event.record, request={}, response=None))


def as_the_log_keeps_it(event: Event) -> dict[str, Any]:
    return event_to_dict(as_the_log_gives_it(event))


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper() * 300  # longer than the log's preview of a tool's output


async def test_every_event_a_recorded_run_stores_reads_back(store_spec: str) -> None:
    script = [Reply(tool_calls=[call("shout", {"text": "hi"})], reasoning="plan"),
              Reply("HI it is")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[shout],
                      store=store_spec, session_id="s1")
        emitted = [e async for e in agent.stream("shout hi")]
        store = agent.state_services.store
        assert store is not None
        stored: list[dict[str, Any]] = await store.events("s1")  # type: ignore[attr-defined]
        await agent.aclose()
    read = [event_from_dict(row) for row in stored]
    kept = [e for e in emitted if e.type not in ("text_delta", "reasoning_delta")]
    assert [e.type for e in read] == [e.type for e in kept]
    for event, again in zip(kept, read, strict=True):
        if event.type == "tool_result":  # the log keeps the start of its output
            assert again == dataclasses.replace(event, content=stored[read.index(again)]
                                                ["preview"])
            assert event.content.startswith(again.content) and again.content != event.content
        elif event.type == "model_call":
            assert again == as_the_log_gives_it(event)
        elif event.type == "done":  # the log counts its messages: the session holds them
            assert again.result.output == event.result.output == "HI it is"
            assert again.result.messages == []
        elif event.type == "turn_end":
            assert event_to_dict(again) == event_to_dict(event)
        else:
            assert again == event, event.type
