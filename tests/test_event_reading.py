"""`event_from_dict` reads back every event `--json` writes and every event the session store
gives back; a field of another type is an `EventFormatError` naming the event and the field, a
message inside a result is read as strictly as a stored row, and an event type this version does
not know is an `UnknownEventType`, which `read_event_lines` skips with one warning."""

from __future__ import annotations

import dataclasses
import json
import warnings
from typing import Any

import pytest
from tests.test_events import _samples

from loopwright import Agent, event_from_dict, event_to_dict, event_to_json, events
from loopwright.event_reading import (
    FIELD_CHECKS,
    EventFormatError,
    SkippedEventWarning,
    UnknownEventType,
    read_event_lines,
)
from loopwright.testing import FakeModelServer, Reply


def test_every_field_type_of_every_event_has_a_check() -> None:
    declared = {str(field.type) for cls in [*events.BY_TYPE.values(), events.ModelCallRecord]
                for field in dataclasses.fields(cls) if field.name not in ("type", "exception")}
    assert declared <= FIELD_CHECKS.keys(), declared - FIELD_CHECKS.keys()


@pytest.mark.parametrize("agent", ["", "delegate:1"])
def test_every_event_type_round_trips_through_a_json_line(agent: str) -> None:
    for event in _samples(agent):
        line = json.loads(event_to_json(event))
        again = event_from_dict(line)
        assert event_to_dict(again) == line, event.type
        if event.type != "partial_output":  # its JSON form holds the JSON, not the instance
            assert again == event, event.type


def done_form() -> dict[str, Any]:
    done = next(e for e in _samples("") if e.type == "done")
    return json.loads(event_to_json(done))  # type: ignore[no-any-return]


WRONG_FIELDS: dict[str, tuple[dict[str, Any], str]] = {
    "a turn as text": ({"type": "turn_start", "turn": "2"}, "turn_start event's turn is \"2\""),
    "no turn": ({"type": "turn_start"}, "turn_start event has no turn"),
    "a tool error flag as text": (
        {"type": "tool_result", "id": "c", "name": "n", "content": "x", "is_error": "false"},
        "tool_result event's is_error"),
    "a duration as a flag": (
        {"type": "tool_result", "id": "c", "name": "n", "content": "x", "duration": True},
        "tool_result event's duration"),
    "usage counts as text": ({"type": "turn_end", "turn": 1, "usage": {"input_tokens": "9"}},
                             "turn_end event's usage"),
    "text that is a number": ({"type": "text_delta", "text": 5}, "text_delta event's text"),
    "a record's turn as text": (
        {"type": "model_call", "record": {**event_to_dict(next(
            e for e in _samples("") if e.type == "model_call"))["record"], "turn": "2"}},
        "model call record's turn"),
    "an event that is a list": ([], "an event is list"),  # type: ignore[dict-item]
}


@pytest.mark.parametrize("damage", list(WRONG_FIELDS))
def test_a_field_of_another_type_is_refused_naming_the_event_and_the_field(damage: str) -> None:
    form, named = WRONG_FIELDS[damage]
    with pytest.raises(EventFormatError) as caught:
        event_from_dict(form)
    assert named in str(caught.value)
    assert not isinstance(caught.value, UnknownEventType)


MESSAGE_DAMAGES: dict[str, tuple[Any, str]] = {
    "a tool error flag as text": ({"role": "tool", "content": "x", "tool_call_id": "c",
                                   "is_error": "false"}, "is_error"),
    "a tool result without its call's id": ({"role": "tool", "content": "x"}, "id of its call"),
    "a role no message has": ({"role": "robot", "content": "x"}, "robot"),
    "a key no message has": ({"role": "user", "content": "x", "secret": 1}, "secret"),
    "calls that are not calls": ({"role": "assistant", "content": "",
                                  "tool_calls": [{"id": 1}]}, "tool_calls"),
    "an attachment pointed at a key with no kind": (
        {"role": "user", "content": "x", "attachments": [{"path": "/root/.ssh/id_rsa"}]},
        "attachments"),
}


@pytest.mark.parametrize("damage", list(MESSAGE_DAMAGES))
def test_a_message_inside_a_result_is_read_as_strictly_as_a_stored_row(damage: str) -> None:
    message, named = MESSAGE_DAMAGES[damage]
    form = done_form()
    form["result"]["messages"].append(message)
    with pytest.raises(EventFormatError, match=f"done event's result is damaged .*{named}"):
        event_from_dict(form)


def test_every_message_a_run_writes_into_its_result_reads_back() -> None:
    from loopwright.messages import Message, ToolCall, tool_result, user

    asked = ToolCall(id="c", name="n", arguments='{"a": 1}')
    messages = [user("look"), Message(role="assistant", tool_calls=[asked], reasoning="plan"),
                tool_result(asked, "failed", is_error=True),
                Message(role="assistant", content="done", marks=frozenset({"set_aside"}))]
    form = done_form()
    form["result"]["messages"] = [m.to_dict() for m in messages]
    again = event_from_dict(form)
    assert again.type == "done"
    assert [m.to_dict() for m in again.result.messages] == form["result"]["messages"]


def test_an_unknown_event_type_is_a_typed_error_naming_it() -> None:
    with pytest.raises(UnknownEventType, match="'thinking_budget'") as caught:
        event_from_dict({"type": "thinking_budget", "left": 3})
    assert caught.value.event_type == "thinking_budget"
    with pytest.raises(UnknownEventType, match="status event of kind 'quota'"):
        event_from_dict({"type": "status", "kind": "quota", "message": "m"})
    with pytest.raises(UnknownEventType):
        event_from_dict({"turn": 1})  # no type at all


def test_a_newer_versions_lines_are_read_skipping_what_this_one_does_not_know() -> None:
    lines = [event_to_json(events.TurnStart(turn=1)),
             json.dumps({"type": "thinking_budget", "left": 3}),
             json.dumps({"type": "turn_end", "turn": 1, "tokens_per_second": 40.5}),
             "",
             json.dumps({"type": "thinking_budget", "left": 2}),
             event_to_json(events.TextDelta(text="hi"))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = list(read_event_lines(lines))
    assert read == [events.TurnStart(turn=1), events.TurnEnd(turn=1), events.TextDelta(text="hi")]
    skipped = [str(w.message) for w in caught if w.category is SkippedEventWarning]
    assert len(skipped) == 1 and skipped[0].startswith("line 2: ") and "thinking_budget" in \
        skipped[0]


@pytest.mark.parametrize("line", ['{"type": "turn_start", "turn": 1', '{"type": "turn_start"}',
                                  '"turn_start"'])
def test_a_damaged_line_names_its_number(line: str) -> None:
    lines = [event_to_json(events.TurnStart(turn=1)), line]
    with pytest.raises(EventFormatError, match=r"^line 2: "):
        list(read_event_lines(lines))


async def test_the_lines_of_a_real_run_read_back_whole() -> None:
    from loopwright.messages import Message

    with FakeModelServer([Reply("hello")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k")
        emitted = [e async for e in agent.stream("hi")]
    read = list(read_event_lines(event_to_json(e) for e in emitted))
    assert read == emitted
    assert all(isinstance(m, Message) for m in read[-1].result.messages)  # type: ignore[union-attr]
