"""Argument values JSON has no room for — `NaN`, `Infinity`, a number too large for a float —
are refused with a precise error, and the history keeps only strict JSON: stored as written,
llama.cpp (which parses every call of the history) refused every later request, and
Anthropic's `input` object went out as invalid JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call


def strict_json(text: str) -> Any:
    """`text` parsed as JSON as other parsers read it: no NaN or Infinity."""
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(("raw", "problem"), [
    ('{"value": NaN}', "(nan)"), ('{"value": -Infinity}', "(-inf)"),
    ('{"value": 1e999}', "(inf)"), ('{"value": [{"deep": NaN}]}', "(nan)")])
async def test_a_value_json_does_not_have_is_refused_and_kept_out_of_the_history(
        raw: str, problem: str) -> None:
    ran: list[float] = []

    @tool
    def scale(value: float) -> str:
        ran.append(value)
        return str(value * 2)

    events: list[Event] = []
    script = [Reply(tool_calls=[call("scale", raw)]), Reply("done")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[scale],
                      callbacks=[events.append])
        result = await agent.run("go")
    assert result.output == "done" and ran == []
    (outcome,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert outcome.is_error
    assert f"the arguments hold a number JSON does not have {problem}" in outcome.content
    for message in result.messages:
        for made in message.tool_calls or ():
            strict_json(made.arguments)
    for arguments in (c["function"]["arguments"] for m in server.model_requests[1].body[
            "messages"] for c in m.get("tool_calls") or ()):
        strict_json(arguments)


async def test_large_and_exact_numbers_json_has_are_taken() -> None:
    @tool
    def echo(value: float, count: int) -> str:
        return f"{value!r} {count}"

    events: list[Event] = []
    script = [Reply(tool_calls=[call("echo", '{"value": 1.5e300, "count": 12345678901234567890}')]),
              Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[echo],
                      callbacks=[events.append])
        await agent.run("go")
    (outcome,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert outcome.content == "1.5e+300 12345678901234567890"
