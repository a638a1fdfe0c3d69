"""Qwen3-Coder XML calls write every value as text; they are given the types of the tool's JSON
schema (tools with a raw schema, as MCP tools are, included), an unclosed last `<parameter=…>`
is kept, and raw schemas are validated in full: `anyOf`, nested objects and arrays."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply
from loopwright.tools.base import Tool
from loopwright.wire.text_calls import coerce_arguments

FAST = RetryPolicy(base_delay=0.01, jitter=0)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "number"},
        "exact": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "note": {"type": "string"},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}
seen: list[dict[str, Any]] = []


async def _record(arguments: dict[str, Any], ctx: Any) -> str:
    seen.append(arguments)
    return f"sum={arguments['a'] + arguments['b']}"


def raw_schema_tool() -> Tool:
    """Built like an MCP tool: a raw JSON schema, validated without a pydantic model."""
    return Tool(name="add_numbers", description="Add two numbers.", parameters=SCHEMA,
                function=_record, raw_arguments=True)


def make_agent(server: FakeModelServer, **kwargs: Any) -> Agent:
    return Agent("qwen3-coder", base_url=server.base_url, api_key="k", retry=FAST,
                 tools=[raw_schema_tool()], **kwargs)


XML_CALL = ("<tool_call>\n<function=add_numbers>\n<parameter=a>\n5\n</parameter>\n"
            "<parameter=b>\n2.5\n</parameter>\n<parameter=exact>\ntrue\n</parameter>\n"
            "<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n<parameter=limit>\nnull\n"
            "</parameter>\n<parameter=note>\n007\n</parameter>\n</function>\n</tool_call>")


@pytest.mark.parametrize("tool_call_format", ["native", "prompt"])
@pytest.mark.parametrize("stream", [True, False])
async def test_xml_values_get_the_types_of_the_schema(stream: bool, tool_call_format: str
                                                      ) -> None:
    seen.clear()
    events: list[Event] = []
    with FakeModelServer(replies=[Reply(XML_CALL, chunk_size=6), Reply("7.5")]) as server:
        result = await make_agent(server, stream=stream, tool_call_format=tool_call_format,
                                  callbacks=[events.append]).run("5+2.5?")
    assert result.output == "7.5"
    assert seen == [{"a": 5, "b": 2.5, "exact": True, "tags": ["x", "y"], "limit": None,
                     "note": "007"}]
    assert [e.content for e in events if isinstance(e, ToolResultEvent)] == ["sum=7.5"]


async def test_an_unclosed_last_parameter_is_kept() -> None:
    seen.clear()
    cut = "<tool_call>\n<function=add_numbers>\n<parameter=a>\n40\n</parameter>\n<parameter=b>\n2"
    with FakeModelServer(replies=[Reply(cut), Reply("42")]) as server:
        result = await make_agent(server).run("40+2?")
    assert result.output == "42" and seen == [{"a": 40, "b": 2}]


async def test_a_value_that_does_not_convert_is_reported_precisely() -> None:
    bad = ("<function=add_numbers>\n<parameter=a>\nfive\n</parameter>\n"
           "<parameter=b>\n1\n</parameter>")
    with FakeModelServer(replies=[Reply(bad), Reply("ok")]) as server:
        await make_agent(server).run("x")
    told = server.model_requests[1].body["messages"][-1]["content"]
    assert "argument 'a' should be integer, got string" in told


def test_coercion_follows_any_of_and_leaves_strings_alone() -> None:
    schema = {"properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                             "s": {"type": "string"}, "o": {"type": "object"},
                             "e": {"enum": [1, 2, 3]}}}
    assert coerce_arguments({"n": "12", "s": "12", "o": "{'k': 1}", "e": "2"}, schema) == {
        "n": 12, "s": "12", "o": {"k": 1}, "e": 2}
    assert coerce_arguments({"n": "none"}, schema) == {"n": None}
    assert coerce_arguments({"x": "1"}, None) == {"x": "1"}


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"a": 1, "b": 2, "limit": "ten"}, "argument 'limit' matches none of the allowed forms"),
    ({"a": 1, "b": 2, "tags": ["x", 3]}, "argument 'tags[1]' should be string, got integer"),
    ({"a": 1}, "missing required argument 'b'"),
    ({"a": 1, "b": 2, "zz": 0}, "unknown argument 'zz'"),
    ({"a": True, "b": 2}, "argument 'a' should be integer, got boolean"),
])
def test_raw_schemas_are_validated_in_full(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        raw_schema_tool().validate(arguments)


def test_nested_rules_are_validated() -> None:
    schema = {"type": "object", "properties": {"edits": {"type": "array", "items": {
        "type": "object", "properties": {"line": {"type": "integer", "minimum": 1}},
        "required": ["line"]}}}}
    tool = Tool(name="t", description="", parameters=schema, function=_record,
                raw_arguments=True)
    assert tool.validate({"edits": [{"line": 3}]}) == {"edits": [{"line": 3}]}
    with pytest.raises(ValueError, match=r"missing required argument 'edits\[1\]\.line'"):
        tool.validate({"edits": [{"line": 3}, {}]})
    with pytest.raises(ValueError, match=r"argument 'edits\[0\]\.line': 0 is less than"):
        tool.validate({"edits": [{"line": 0}]})
