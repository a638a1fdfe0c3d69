"""Test helpers for loopwright and its users: a fake model server with real wire formats.

`FakeModelServer` is a real HTTP server on 127.0.0.1 that speaks OpenAI Chat Completions,
Anthropic Messages and OpenAI Responses, streaming or not, and answers from a script of
format-neutral `Reply` and `Fault` items (`add`: a `@tool` function; the whole program is
examples/testing_your_agent.py, and docs/testing.md says the rest):

    with FakeModelServer([
        Fault.rate_limit(retry_after_ms=10),  # one 429, then
        Reply(tool_calls=[call("add", {"a": 2, "b": 3})]),
        Reply("5"),
    ]) as server:
        agent = Agent("any-model", base_url=server.base_url, api_key="test", tools=[add])
        assert agent.chat("2+3?") == "5"
        assert server.model_requests[-1].body["messages"][-1]["content"] == "5"  # add's result
    print("ok")
"""

from loopwright.testing._server import FakeModelServer, Flavor, fake_server
from loopwright.testing.scripted import (
    Fault,
    FaultKind,
    FinishReason,
    Handler,
    RecordedRequest,
    Reply,
    ScriptedCall,
    ScriptedUsage,
    ScriptItem,
    WireFormat,
    call,
    item_from_dict,
    item_to_dict,
    load_script,
)

__all__ = [
    "FakeModelServer",
    "Fault",
    "FaultKind",
    "FinishReason",
    "Flavor",
    "Handler",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedCall",
    "ScriptedUsage",
    "WireFormat",
    "call",
    "fake_server",
    "item_from_dict",
    "item_to_dict",
    "load_script",
]
