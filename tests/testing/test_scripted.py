"""Script items: defaults, validation and the JSON form used by the subprocess server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwright.testing import (
    Fault,
    Reply,
    ScriptedUsage,
    call,
    item_from_dict,
    item_to_dict,
    load_script,
)


def test_finish_reason_defaults_from_the_presence_of_tool_calls() -> None:
    assert Reply("hi").stop_reason == "end_turn"
    assert Reply(tool_calls=[call("f")]).stop_reason == "tool_calls"
    assert Reply("cut", finish_reason="max_tokens").stop_reason == "length"
    assert Reply("x", finish_reason="stop").stop_reason == "end_turn"


def test_unknown_finish_reason_is_rejected() -> None:
    with pytest.raises(ValueError, match="finish_reason"):
        Reply("x", finish_reason="halt")


def test_call_arguments_dict_is_json_and_string_is_verbatim() -> None:
    assert call("add", {"a": 1}).arguments_json == '{"a":1}'
    assert call("add", '{"a": 1,').arguments_json == '{"a": 1,'
    assert call("now").arguments_json == "{}"


def test_tool_calls_list_is_frozen_into_a_tuple() -> None:
    calls = [call("f")]
    reply = Reply(tool_calls=calls)
    calls.append(call("g"))
    assert len(reply.tool_calls) == 1


def test_empty_fault_is_an_empty_reply() -> None:
    assert Fault.empty() == Reply()


@pytest.mark.parametrize(
    "item",
    [
        Reply("hello"),
        Reply(
            "text",
            tool_calls=[call("add", {"a": 1}, id="c1"), call("bad", '{"x": ')],
            reasoning="why",
            finish_reason="length",
            usage=ScriptedUsage(input_tokens=5, output_tokens=2, cache_read_tokens=1),
            signature="sig",
            chunk_size=3,
            delay=0.5,
            empty_id=True,
            null_fields=True,
            interleave_calls=True,
            model="m",
        ),
        Fault.rate_limit(retry_after=1.5, retry_after_ms=1500),
        Fault.status(502, body={"error": "bad gateway"}, headers={"x-a": "b"}),
        Fault.overloaded(),
        Fault.cut_stream(Reply("partial"), after_chunks=4),
        Fault.stall(Reply("slow"), after_chunks=1, seconds=0.25),
        Fault.disconnect(),
    ],
)
def test_items_round_trip_through_json(item: Reply | Fault) -> None:
    as_json = json.loads(json.dumps(item_to_dict(item)))
    assert item_from_dict(as_json) == item


def test_json_form_of_a_reply_is_small_and_readable() -> None:
    reply = Reply(tool_calls=[call("add", {"a": 1})])
    assert item_to_dict(reply) == {"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}
    assert item_to_dict(Fault.rate_limit(retry_after_ms=10)) == {
        "fault": "rate_limit",
        "retry_after_ms": 10,
    }


def test_empty_fault_in_json_is_an_empty_reply() -> None:
    assert item_from_dict({"fault": "empty"}) == Reply()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"txt": "typo"}, "unknown reply field"),
        ({"fault": "explode"}, "unknown fault"),
        ({"fault": "rate_limit", "seconds": 3}, "unknown fault 'rate_limit' field"),
        ({"tool_calls": [{"arguments": {}}]}, "needs a string 'name'"),
        ({"text": "x", "usage": {"prompt_tokens": 3}}, "unknown usage field"),
        ({"fault": "status"}, "fault 'status'.*code"),
    ],
)
def test_bad_json_entries_fail_with_a_clear_message(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        item_from_dict(entry)


def test_load_script_reads_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"text": "hi"}, {"fault": "overloaded"}]))
    assert load_script(path) == [Reply("hi"), Fault.overloaded()]
    assert load_script(str(path)) == load_script([{"text": "hi"}, {"fault": "overloaded"}])


def test_load_script_rejects_a_non_list(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"text": "hi"}))
    with pytest.raises(ValueError, match="list"):
        load_script(path)
