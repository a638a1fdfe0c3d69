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


def _samples(agent: str) -> list[Event]:
    """One event of every type, every field set away from its default."""
    from loopwright import events as ev
    from loopwright.messages import Usage, assistant
    from loopwright.result import RunResult

    result = RunResult(output="done", messages=[assistant("done")], stop_reason="completed",
                       turns=2, usage=Usage(input_tokens=3), cost=0.5)
    record = ev.ModelCallRecord(
        id="c1", purpose="turn", run_id="r", session_id="s", agent=agent, turn=2, model="m",
        provider="p", endpoint="e", mode="chat", started=1.5, latency=0.25, attempts=2,
        streamed=True, request={"messages": 1}, response={"content": "x"},
        usage=Usage(output_tokens=4), cost=0.1, error="e", status=500)
    return [
        ev.TurnStart(turn=2, agent=agent), ev.TextDelta(text="t", agent=agent),
        ev.ReasoningDelta(text="r", agent=agent),
        ev.PartialOutput(output=object(), data={"a": 1}, agent=agent),
        ev.PartialOutput(output="as is", agent=agent),
        ev.ToolCallEvent(id="c", name="n", arguments={"k": 1}, agent=agent),
        ev.ToolResultEvent(id="c", name="n", content="out", is_error=True, duration=0.5,
                           data={"denied": True}, agent=agent),
        ev.StatusEvent(kind="custom", message="m", data={"d": 1}, agent=agent),
        ev.ReviewEvent(check="k", verdict="send_back", reason="why", budget_left=1,
                       call_id="c", applied=False, agent=agent),
        ev.ModelCallEvent(record=record, agent=agent),
        ev.TurnEnd(turn=2, usage={"input_tokens": 1}, cost=0.25, agent=agent),
        ev.DoneEvent(result=result, agent=agent),
        ev.ErrorEvent(message="m", error_type="error", result=result, agent=agent,
                      exception=ValueError("x")),
        ev.ErrorEvent(message="m", agent=agent),
        ev.CancelledEvent(result=None, agent=agent),
    ]


def _walked(event: Event) -> dict[str, object]:
    """The JSON form as the fields say it (the rule each type's own function writes out)."""
    import dataclasses

    out: dict[str, object] = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "exception" or (f.name == "agent" and not value):
            continue
        if f.name in ("result", "record") and value is not None:
            value = value.to_dict()
        if event.type == "partial_output" and f.name in ("output", "data"):
            if f.name == "output":
                out["output"] = event.data if event.data is not None else event.output  # type: ignore[union-attr]
            continue
        out[f.name] = value
    return out


def test_each_event_type_serialises_every_field_in_order() -> None:
    from loopwright.events import BY_TYPE

    for agent in ("", "delegate:1"):
        samples = _samples(agent)
        assert {e.type for e in samples} == set(BY_TYPE)  # every type has a sample
        for event in samples:
            form = event_to_dict(event)
            assert list(form.items()) == list(_walked(event).items()), event.type
            assert ("agent" in form) == bool(agent)
            assert "exception" not in form


def test_each_maker_makes_what_its_class_makes() -> None:
    import dataclasses

    import pytest

    from loopwright import events as ev

    makers = {ev.TurnStart: ev.new_turn_start, ev.TurnEnd: ev.new_turn_end,
              ev.ToolCallEvent: ev.new_tool_call, ev.ToolResultEvent: ev.new_tool_result,
              ev.ModelCallEvent: ev.new_model_call, ev.ModelCallRecord: ev.new_call_record}
    samples = [e for e in _samples("delegate:1") if type(e) in makers]
    samples.append(next(e for e in samples if isinstance(e, ev.ModelCallEvent)).record)  # type: ignore[arg-type]
    for sample in samples:
        make = makers[type(sample)]
        given = {f.name: getattr(sample, f.name) for f in dataclasses.fields(sample)}
        made = make(**given)
        assert type(made) is type(sample) and made == sample
        assert [getattr(made, n) for n in given] == list(given.values())
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.agent = "x"  # type: ignore[misc]
    # left out: each default, and a fresh one from a default factory each time
    assert ev.new_turn_start(turn=1) == ev.TurnStart(turn=1)
    first, second = (ev.new_tool_result(id="c", name="n", content="x") for _ in range(2))
    assert first == ev.ToolResultEvent(id="c", name="n", content="x")
    assert first.data == {} and first.data is not second.data
    assert ev.new_turn_end(turn=3).usage == {} and ev.new_turn_end(turn=3).cost is None
    with pytest.raises(TypeError):
        ev.new_turn_start(turn=1, unknown=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ev.new_turn_start()  # type: ignore[call-arg]


def test_a_maker_refuses_a_class_whose_init_does_more() -> None:
    """What the class's `__init__` would do that a maker does not (a `__post_init__`, a field
    not set by `__init__`, instances with a `__dict__`) is refused when the maker is made."""
    import dataclasses

    import pytest

    from loopwright.events import maker

    @dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
    class Checked:
        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    @dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
    class Derived:
        value: int
        twice: int = dataclasses.field(init=False, default=0)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Unslotted:
        value: int

    for cls in (Checked, Derived, Unslotted):
        with pytest.raises(TypeError):
            maker(cls)
