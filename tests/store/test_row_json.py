"""A turn's rows are encoded by orjson (store/rows.py, issue 30 item 5): what reads them back is
what `json` wrote read back, for every shape an event or a message can carry, and what orjson
refuses is written by `json` as before."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from typing import Any

import pytest

from loopwright.errors import SessionError
from loopwright.messages import Message, ToolCall, assistant, tool_result
from loopwright.store.rows import message_row, record_json

STDLIB = json.JSONEncoder(ensure_ascii=False, default=str, separators=(",", ":"))


@dataclasses.dataclass
class Point:
    x: int


SHAPES: list[Any] = [
    {"type": "turn_end", "turn": 3, "usage": {"input_tokens": 10, "requests": 1},
     "cost": 0.1 + 0.2, "user": ["héllo ✓ 日本"], "text": "", "reasoning": None},
    [{"type": "tool_result", "duration": 1.2e-05, "data": {"rows": [1, 2.5, True, None]}},
     {"type": "model_call", "record": {"started": 1795828660.0552921, "latency": 1e16}}],
    {"tuple": (1, "two"), "nested": {"a": {"b": {"c": [[], {}]}}}, "neg": -0.0, "big": 2**63 - 1},
    {"past 64 bits": 2**70},  # orjson refuses: json writes it
    {1: "an int key", None: "a None key"},  # orjson refuses: json writes "1" and "null"
    {"lone surrogate": "\ud800"},  # orjson refuses: json writes it as it is
    {"dataclass": Point(3), "when": datetime.datetime(2026, 11, 28, 1, 2, 3),
     "day": datetime.date(2026, 11, 28), "bytes": b"\x00raw", "set": {1}},  # default=str
]


@pytest.mark.parametrize("value", SHAPES)
def test_an_event_row_reads_back_as_json_wrote_it(value: Any) -> None:
    assert json.loads(record_json(value)) == json.loads(STDLIB.encode(value))


def test_a_float_that_is_not_a_number_is_stored_as_null() -> None:
    """json wrote NaN (not JSON: a browser or PostgreSQL's jsonb refuses it)."""
    assert json.loads(record_json({"cost": math.nan, "latency": math.inf})) == {
        "cost": None, "latency": None}


def test_a_message_row_keeps_its_fields_and_its_error() -> None:
    call = ToolCall(id="c1", name="lookup", arguments='{"key": "ä"}')
    for message in (assistant("", tool_calls=[call]), tool_result(call, "value ✓")):
        role, content, data = message_row(message)
        assert (role, content) == (message.role, message.content)
        fields = message.to_dict()
        del fields["role"], fields["content"]
        assert json.loads(data) == json.loads(json.dumps(fields))
    odd = Message(role="assistant", content="x", provider_data={"block": Point(1)})
    with pytest.raises(SessionError, match="cannot store a assistant message"):
        message_row(odd)  # as json refused it: never stored as text it cannot read back
