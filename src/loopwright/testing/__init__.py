"""Test helpers for loopwright and its users: a fake model server with real wire formats.

`FakeModelServer` is a real HTTP server on 127.0.0.1 that speaks OpenAI Chat Completions,
Anthropic Messages and OpenAI Responses, streaming or not, and answers from a script of
format-neutral `Reply` and `Fault` items:

    from loopwright.testing import FakeModelServer, Fault, Reply, call

    with FakeModelServer([
        Fault.rate_limit(retry_after_ms=10),
        Reply(tool_calls=[call("add", {"a": 1, "b": 2})]),
        Reply("3"),
    ]) as server:
        agent = Agent(model="gpt-4o-mini", base_url=server.base_url, api_key="test", tools=[add])
        assert agent.chat("1+2?") == "3"
        assert server.model_requests[1].body["messages"][0]["role"] == "user"
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
