"""Model profiles are read by the wire adapters, and the fake server in strict mode rejects what
the hosted provider rejects."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from loopwright import Agent, messages
from loopwright.messages import ModelRequest, ToolSpec
from loopwright.profiles import Profile, profile_for
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.base import tool
from loopwright.wire import get_wire_format


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_gpt5_gets_max_completion_tokens_and_no_temperature() -> None:
    with FakeModelServer([Reply("ok")]) as server:
        agent = Agent("gpt-5", base_url=server.base_url, api_key="k", max_tokens=100,
                      temperature=0.2, api_mode="chat_completions")
        result = await agent.run("x")
    assert result.stop_reason == "completed", result.error
    body = server.model_requests[0].body
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body and "temperature" not in body


async def test_the_strict_fake_rejects_max_tokens_for_reasoning_models_like_openai() -> None:
    with FakeModelServer([Reply("ok")], strict=True) as server:
        async with httpx.AsyncClient() as client:
            reply = await client.post(server.base_url + "/chat/completions", json={
                "model": "o3-mini", "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}]})
            assert reply.status_code == 400
            assert "Use 'max_completion_tokens' instead" in reply.json()["error"]["message"]
            reply = await client.post(server.base_url + "/chat/completions", json={
                "model": "o3-mini", "max_completion_tokens": 5,
                "messages": [{"role": "user", "content": "x"}]})
            assert reply.status_code == 200


def test_the_strict_fake_fails_a_test_that_leaves_scripted_replies_unasked() -> None:
    with pytest.raises(AssertionError, match=r"1 scripted item\(s\) never requested"), \
            FakeModelServer([Reply("asked"), Reply("never asked")]) as server:
        Agent("fake-model", base_url=server.base_url, api_key="k").chat("x")


async def test_the_strict_fake_rejects_an_open_strict_json_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with FakeModelServer([], strict=True) as server:
        async with httpx.AsyncClient() as client:
            reply = await client.post(server.base_url + "/chat/completions", json={
                "model": "gpt-4o", "messages": [{"role": "user", "content": "x"}],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "out", "strict": True, "schema": schema}}})
    assert reply.status_code == 400
    assert "'additionalProperties' is required" in reply.json()["error"]["message"]


def body(mode: str, profile: Profile, **request: Any) -> dict[str, Any]:
    history = [messages.system("be brief"), messages.user("hi")]
    spec = ToolSpec(name="add", description="add", parameters={"type": "object"})
    built: dict[str, Any] = get_wire_format(mode).build_body(
        ModelRequest(model="m", messages=history, tools=[spec], **request), stream=False,
        profile=profile)
    return built


def test_one_call_per_reply_is_asked_in_each_wire_format() -> None:
    serial = Profile(parallel_tool_calls=False)
    assert body("chat_completions", serial)["parallel_tool_calls"] is False
    assert body("responses", serial)["parallel_tool_calls"] is False
    assert body("anthropic_messages", serial)["tool_choice"] == {
        "type": "auto", "disable_parallel_tool_use": True}
    assert "parallel_tool_calls" not in body("chat_completions", Profile())


def test_reasoning_effort_is_sent_only_where_the_family_has_it() -> None:
    for model, sent in [("gpt-4o", False), ("gpt-5-mini", True), ("some-new-model", True)]:
        built = body("chat_completions", profile_for(model), reasoning_effort="high")
        assert ("reasoning_effort" in built) is sent, model
    renamed = body("chat_completions", Profile(supports_reasoning_effort=True,
                                               reasoning_field="reasoning"),
                   reasoning_effort="low")
    assert renamed["reasoning"] == {"effort": "low"}


def test_a_model_without_a_system_role_gets_it_in_the_first_user_message() -> None:
    built = body("chat_completions", profile_for("o1-mini"))
    assert [m["role"] for m in built["messages"]] == ["user"]
    assert built["messages"][0]["content"] == "be brief\n\nhi"


async def test_a_model_without_native_tools_switches_to_prompt_mode_by_itself() -> None:
    script = [Reply('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'),
              Reply("5")]
    with FakeModelServer(script) as server:
        agent = Agent("o1-mini", base_url=server.base_url, api_key="k", tools=[add],
                      api_mode="chat_completions")
        result = await agent.run("2+3?")
    assert result.output == "5", result.error
    first = server.model_requests[0].body
    assert "tools" not in first
    assert "add" in first["messages"][0]["content"]
    assert "5" in str(server.model_requests[1].body["messages"][-1]["content"])


async def test_native_tools_still_go_natively_for_tool_capable_models() -> None:
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 1})]), Reply("2")]
    with FakeModelServer(script) as server:
        agent = Agent("gpt-5", base_url=server.base_url, api_key="k", tools=[add])
        assert (await agent.run("1+1?")).output == "2"
    assert server.model_requests[0].body["tools"][0]["function"]["name"] == "add"
