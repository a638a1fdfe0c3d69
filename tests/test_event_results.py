"""`event_from_dict` reads a terminal event's result with the same strict reader as a sub-agent's
stored answer (`store.rows`): a line of `loopwright run --json` kept in a file and damaged
(cut, hand-edited, written by another tool) is refused with a `ValueError` naming the field,
not read back with a wrong-typed field nor failing with a raw KeyError or TypeError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from loopwright import Agent, event_from_dict, event_to_json
from loopwright.testing import FakeModelServer, Reply


class City(BaseModel):
    name: str
    population: int


async def done_line(reply: Reply, **agent_options: Any) -> dict[str, Any]:
    """The `done` event of a real run, as a `--json` line decodes."""
    with FakeModelServer([reply]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", **agent_options)
        events = [json.loads(event_to_json(event)) async for event in agent.stream("hi")]
    assert events[-1]["type"] == "done"
    return events[-1]  # type: ignore[no-any-return]


DAMAGES = {
    "no stop_reason": (lambda r: r.pop("stop_reason"), "stop_reason"),
    "turns as text": (lambda r: r.update(turns="3"), "turns"),
    "a usage key no run writes": (lambda r: r.update(usage={"tokens": 5}), "usage"),
    "a cost that is text": (lambda r: r.update(cost="free"), "cost"),
    "a stop reason no run has": (lambda r: r.update(stop_reason="bored"), "stop_reason"),
    "messages that are not a list": (lambda r: r.update(messages="hi"), "messages"),
    "a message with no role": (lambda r: r["messages"][0].pop("role"), "role"),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
async def test_a_damaged_result_is_refused_naming_what_is_wrong(damage: str) -> None:
    line = await done_line(Reply("hello"))
    change, named = DAMAGES[damage]
    change(line["result"])
    with pytest.raises(ValueError, match=f"damaged.*{named}"):
        event_from_dict(line)


async def test_a_result_that_is_not_an_object_is_refused() -> None:
    line = await done_line(Reply("hello"))
    with pytest.raises(ValueError, match="done event's result is"):
        event_from_dict({**line, "result": ["hello"]})


async def test_an_intact_result_reads_back_whole() -> None:
    line = await done_line(Reply("hello"))
    event = event_from_dict(line)
    assert event.type == "done" and event_to_json(event) == json.dumps(line)


async def test_a_structured_output_is_not_taken_for_damage() -> None:
    line = await done_line(Reply('{"name": "Bern", "population": 1}'), output_type=City)
    event = event_from_dict(line)
    assert event.type == "done"
    assert event.result.output == {"name": "Bern", "population": 1}


async def test_a_result_as_the_store_keeps_it_reads_back() -> None:
    # the recorder counts the messages instead of keeping them in the event
    line = await done_line(Reply("hello"))
    messages = line["result"].pop("messages")
    result = {**line["result"], "message_count": len(messages)}
    event = event_from_dict({**line, "result": result})
    assert event.type == "done" and event.result.output == "hello"
    assert event.result.messages == []
