"""`writes.merged`: a batch already in its order (a steady turn's: messages, then events) is
taken as it is; any other is joined and ordered as before."""

from __future__ import annotations

from loopwright.messages import ToolCall, assistant, tool_result, user
from loopwright.store import RunRecord
from loopwright.store.writes import (
    AppendMessages,
    Compact,
    OpenSession,
    RecordEvents,
    RecordRun,
    ReleaseLease,
    merged,
)


def test_a_steady_turns_batch_is_taken_as_it_is() -> None:
    answered = ToolCall(id="c1", name="x", arguments={})
    messages = AppendMessages(messages=[assistant("a"), tool_result(answered, "out")])
    events = RecordEvents(run_id="r1", events=[{"type": "turn_end", "turn": 1}])
    assert merged([messages, events]) == [messages, events]
    assert merged([events]) == [events]
    assert merged([]) == []


def test_writes_out_of_order_or_of_one_kind_are_joined_and_ordered() -> None:
    first = AppendMessages(messages=[user("q")])
    second = AppendMessages(messages=[assistant("a")])
    events = RecordEvents(run_id="r1", events=[{"type": "turn_start", "turn": 1}])
    assert merged([events, first]) == [first, events]
    assert merged([first, second]) == [AppendMessages(messages=[user("q"), assistant("a")])]
    release = ReleaseLease(owner="o")
    run = RecordRun(record=RunRecord(run_id="r1"))
    opening = OpenSession(owner="o", fields={})
    assert merged([release, run]) == [run, release]
    assert merged([first, opening]) == [opening, first]
    compact = Compact(messages=[user("summary")])
    assert merged([compact, first]) == [compact, first]  # the order of the history kept


def test_an_empty_events_write_is_left_out() -> None:
    first = AppendMessages(messages=[user("q")])
    assert merged([RecordEvents(run_id="r1", events=[])]) == []
    assert merged([first, RecordEvents(run_id="r1", events=[])]) == [first]
