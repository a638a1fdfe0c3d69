"""Typed events: order per turn, one terminal event, JSON round trip, one stream for all."""

from __future__ import annotations

import contextlib
import json

from loopwright import Agent, event_from_dict, event_to_dict, event_to_json, tool
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Reply, call


@tool(read_only=True)
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


def make_agent(server: FakeModelServer, **kw: object) -> Agent:
    return Agent("m", base_url=server.base_url, api_key="k", tools=[shout], **kw)  # type: ignore[arg-type]


SCRIPT = [Reply(tool_calls=[call("shout", {"text": "hi"})], reasoning="plan"),
          Reply(text="HI it is")]


async def test_stream_yields_typed_events_in_contract_order() -> None:
    with FakeModelServer(replies=SCRIPT) as server:
        events = [e async for e in make_agent(server).stream("shout hi")]
    types = [e.type for e in events]
    collapsed = [t for n, t in enumerate(types) if n == 0 or t != types[n - 1]]
    assert collapsed == ["turn_start", "reasoning_delta", "model_call", "tool_call",
                         "tool_result", "turn_end", "turn_start", "text_delta", "model_call",
                         "turn_end", "done"]
    assert "".join(e.text for e in events if e.type == "reasoning_delta") == "plan"
    events = [e for e in events if e.type not in ("reasoning_delta", "model_call")]
    tool_call = events[1]
    assert tool_call.type == "tool_call" and tool_call.arguments == {"text": "hi"}
    result_event = events[2]
    assert result_event.type == "tool_result" and result_event.content == "HI"
    assert result_event.duration >= 0
    assert events[-1].type == "done" and events[-1].result.output == "HI it is"


async def test_callbacks_and_stream_see_the_same_events() -> None:
    seen: list[Event] = []
    with FakeModelServer(replies=SCRIPT) as server:
        streamed = [e async for e in make_agent(server, callbacks=[seen.append]).stream("x")]
    assert [event_to_dict(e) for e in seen] == [event_to_dict(e) for e in streamed]


async def test_every_event_round_trips_through_json() -> None:
    with FakeModelServer(replies=SCRIPT) as server:
        events = [e async for e in make_agent(server).stream("x")]
    for event in events:
        line = event_to_json(event)
        assert event_from_dict(json.loads(line)) == event


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    # strict=False: the run is cancelled at turn_start, before it may ask for the reply
    with FakeModelServer(replies=[Reply(text="a long answer " * 50, delay=0.2)],
                         strict=False) as server:
        agent = make_agent(server)
        async with contextlib.aclosing(agent.stream("x")) as events:
            async for event in events:
                if event.type == "turn_start":
                    break
        assert not agent._live
