"""Fallback providers (DESIGN §3): when the primary fails for good, the conversation continues on
the next provider, in that provider's wire format."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.client import ModelClient
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Fault, Reply, call
from shared_helpers import trust_project

TWO_TRIES = RetryPolicy(attempts=2, base_delay=0.01, jitter=0)


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def statuses(events: list[Event], kind: str) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == kind]


def dead(times: int = 2) -> list[Fault]:
    return [Fault.status(503) for _ in range(times)]


async def test_a_dead_chat_server_hands_the_whole_history_to_an_anthropic_fallback() -> None:
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=[call("add", {"a": 1, "b": 2})]), *dead()]
                         ) as primary, FakeModelServer([
        Reply(tool_calls=[call("add", {"a": 3, "b": 4})]), Reply("3 and 7"),
    ]) as backup:
        agent = Agent("gpt-main", base_url=primary.base_url, api_key="k1", tools=[add],
                      retry=TWO_TRIES, callbacks=[events.append],
                      fallbacks=[{"model": "anthropic:claude-backup", "base_url": backup.url,
                                  "api_key": "k2"}])
        result = await agent.run("add things")
    assert result.stop_reason == "completed" and result.output == "3 and 7"
    assert len(primary.model_requests) == 3  # once answered, then two tries that failed
    first, second = backup.model_requests
    assert first.path == "/v1/messages" and first.headers["x-api-key"] == "k2"
    assert first.body["model"] == "claude-backup"
    turns = first.body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"][0]["type"] == "tool_use"
    assert turns[1]["content"][0]["input"] == {"a": 1, "b": 2}
    assert turns[2]["content"][0] == {"type": "tool_result", "content": "3",
                                      "tool_use_id": turns[1]["content"][0]["id"],
                                      "cache_control": {"type": "ephemeral"}}
    assert len(second.body["messages"]) == 5  # the run stays on the fallback
    (fallback,) = statuses(events, "fallback")
    assert "claude-backup" in fallback.message and fallback.data["to"].startswith("anthropic")


async def test_fallbacks_are_tried_in_order_into_the_responses_api() -> None:
    events: list[Event] = []
    with FakeModelServer(dead()) as primary, FakeModelServer(dead()) as second, \
            FakeModelServer([Reply("third time")]) as third:
        agent = Agent("m", base_url=primary.base_url, api_key="k", retry=TWO_TRIES,
                      callbacks=[events.append], fallbacks=[
                          {"model": "m2", "base_url": second.base_url},
                          {"model": "m3", "base_url": third.base_url, "api_mode": "responses"},
                      ])
        result = await agent.run("hi")
    assert result.output == "third time"
    (request,) = third.model_requests
    assert request.path == "/v1/responses"
    assert request.body["input"][-1] == {"type": "message", "role": "user", "content": "hi"}
    assert len(statuses(events, "fallback")) == 2


async def test_when_every_provider_fails_the_run_errors_naming_them_all() -> None:
    with FakeModelServer(dead()) as primary, FakeModelServer(dead()) as backup:
        agent = Agent("m", base_url=primary.base_url, retry=TWO_TRIES,
                      fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("hi", raise_on_error=False)
    assert result.stop_reason == "error"
    assert result.error is not None and "every provider failed" in result.error
    assert "503" in result.error


async def test_a_401_refreshes_the_credentials_once_and_retries_the_primary() -> None:
    refreshed: list[str] = []

    async def refresh(client: ModelClient) -> str | None:
        refreshed.append(client.model)
        return "fresh-key"

    with FakeModelServer([Fault.status(401), Reply("ok")]) as primary, \
            FakeModelServer([]) as backup:
        agent = Agent("m", base_url=primary.base_url, api_key="stale", retry=TWO_TRIES,
                      refresh_credentials=refresh,
                      fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("hi")
    assert result.output == "ok"
    assert refreshed == ["m"]
    assert [r.headers["authorization"] for r in primary.model_requests] == [
        "Bearer stale", "Bearer fresh-key"]
    assert backup.model_requests == []


async def test_a_403_after_the_refresh_moves_to_the_fallback() -> None:
    calls: list[int] = []

    async def refresh(client: ModelClient) -> str | None:
        calls.append(1)
        return "still-wrong"

    events: list[Event] = []
    with FakeModelServer([Fault.status(403), Fault.status(403)]) as primary, \
            FakeModelServer([Reply("backup")]) as backup:
        agent = Agent("m", base_url=primary.base_url, api_key="k", retry=TWO_TRIES,
                      refresh_credentials=refresh, callbacks=[events.append],
                      fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("hi")
    assert result.output == "backup"
    assert calls == [1]
    assert len(primary.model_requests) == 2
    assert len(statuses(events, "credentials_refreshed")) == 1
    assert len(statuses(events, "fallback")) == 1


async def test_a_context_overflow_is_not_handed_to_a_fallback() -> None:
    overflow = Fault.status(400, body={"error": {"message": "maximum context length exceeded"}})
    with FakeModelServer([overflow]) as primary, FakeModelServer([]) as backup:
        agent = Agent("m", base_url=primary.base_url, retry=TWO_TRIES,
                      fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("hi", raise_on_error=False)
    assert result.stop_reason == "error"
    assert backup.model_requests == []


async def test_fallbacks_from_loopwright_toml(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeModelServer(dead()) as primary, FakeModelServer([Reply("configured")]) as backup:
        (tmp_path / "loopwright.toml").write_text(
            f'fallbacks = [{{ model = "anthropic:claude-b", base_url = "{backup.url}" }}]\n'
            "retry_attempts = 2\nretry_base_delay = 0.01\n")
        trust_project(tmp_path)  # a fallback naming its own server needs the user's trust
        monkeypatch.chdir(tmp_path)
        result = await Agent("m", base_url=primary.base_url).run("hi")
    assert result.output == "configured"
    (request,) = backup.model_requests
    assert request.path == "/v1/messages" and request.body["model"] == "claude-b"


async def test_a_fallback_may_be_a_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeModelServer(dead()) as primary, FakeModelServer([Reply("by string")]) as backup:
        monkeypatch.setenv("LOOPWRIGHT_BASE_URL", backup.base_url)
        agent = Agent("m", base_url=primary.base_url, retry=TWO_TRIES,
                      fallbacks=["backup-model"])
        result = await agent.run("hi")
    assert result.output == "by string"
    assert backup.model_requests[0].body["model"] == "backup-model"
