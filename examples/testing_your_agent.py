"""Test your own agent without a hosted model: the fake server speaks the real wire formats."""

from loopwright import Agent, tool
from loopwright.testing import FakeModelServer, Fault, Reply, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


with FakeModelServer([
    Fault.rate_limit(retry_after_ms=10),  # one 429, then
    Reply(tool_calls=[call("add", {"a": 2, "b": 3})]),
    Reply("5"),
]) as server:
    agent = Agent("any-model", base_url=server.base_url, api_key="test", tools=[add])
    assert agent.chat("2+3?") == "5"
    assert server.model_requests[-1].body["messages"][-1]["content"] == "5"  # add's result
print("ok")
