"""Small ergonomics: `@tool` stays callable, `chat()` inside a running loop, the user's own
`http_client`, `usage_limits`, refusals as their own stop reason."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from loopwright import Agent, ToolContext
from loopwright.config import load_settings
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer, Reply, ScriptedUsage, call
from loopwright.tools.base import CallingRun, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(read_only=True)
async def shout(text: str) -> str:
    """Shout."""
    return text.upper()


async def test_a_tool_is_still_the_function_it_was_made_from() -> None:
    assert add(2, 3) == 5
    assert await shout("hi") == "HI"
    assert add.name == "add" and add.__doc__ == "Add two numbers."
    assert shout.read_only and add.parameters["required"] == ["a", "b"]


async def test_chat_works_inside_a_running_event_loop() -> None:
    with FakeModelServer([Reply("hello from a private loop")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k")
        assert agent.chat("hi") == "hello from a private loop"
    assert asyncio.get_running_loop().is_running()


async def test_the_users_own_http_client_carries_the_requests() -> None:
    seen: list[str] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request.url.path)

    client = httpx.AsyncClient(event_hooks={"request": [record]})
    with FakeModelServer([Reply("ok")]) as server:
        async with Agent("fake-model", base_url=server.base_url, api_key="k",
                         http_client=client) as agent:
            assert (await agent.run("hi")).output == "ok"
    assert seen == ["/v1/chat/completions"]
    assert not client.is_closed  # the user's: never closed by the agent
    await client.aclose()


async def test_a_token_limit_stops_the_run_and_its_calls_are_not_run() -> None:
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 2})],
                    usage=ScriptedUsage(input_tokens=900, output_tokens=200))]
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", tools=[add],
                      usage_limits={"total_tokens": 1000})
        result = await agent.run("x")
    assert result.stop_reason == "usage_limit"
    assert result.error == "usage limit reached: 1100 total tokens (limit 1000)"
    assert not any(m.role == "tool" for m in result.messages)
    assert len(server.model_requests) == 1


async def test_a_request_limit_stops_before_the_next_call() -> None:
    with FakeModelServer([Reply(tool_calls=[call("add", {"a": 1, "b": 2})])]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", tools=[add],
                      usage_limits={"requests": 1})
        result = await agent.run("x")
    assert result.stop_reason == "usage_limit" and len(server.model_requests) == 1
    assert [m.content for m in result.messages if m.role == "tool"] == ["3"]


def test_usage_limits_from_a_config_file_are_checked(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text("[usage_limits]\ntotal_tokens = 5000\n"
                                              "cost = 0.5\n", encoding="utf-8")
    assert load_settings(cwd=tmp_path, environ={}).usage_limits == {"total_tokens": 5000,
                                                                     "cost": 0.5}
    (tmp_path / "loopwright.toml").write_text('[usage_limits]\ntokens = "many"\n',
                                              encoding="utf-8")
    with pytest.raises(ConfigError, match="usage_limits"):
        load_settings(cwd=tmp_path, environ={})


@pytest.mark.parametrize("api_mode", ["chat_completions", "responses", "anthropic_messages"])
@pytest.mark.parametrize("text", ["I can't help with that.", ""])
async def test_a_content_filter_finish_is_a_refusal_with_the_models_text(api_mode: str,
                                                                         text: str) -> None:
    with FakeModelServer([Reply(text, finish_reason="content_filter")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", api_mode=api_mode)
        result = await agent.run("x")
    assert result.stop_reason == "refused"
    assert result.output == text
    assert len(server.model_requests) == 1


async def test_a_tool_sees_a_narrow_view_of_its_run_not_the_run_state() -> None:
    """Issue 31: `ToolContext.services["run"]` handed every tool the run's whole mutable state;
    a tool now gets `ctx.run`, a frozen view of what it may use (the tag, the session, the
    shared budget, the history, the event sink and the usage charge)."""
    seen: list[ToolContext] = []

    @tool
    async def look(ctx: ToolContext) -> str:
        """Look at the run."""
        seen.append(ctx)
        return "looked"

    script = [Reply(tool_calls=[call("look", {})]), Reply("done")]
    with FakeModelServer(script) as server:
        result = await Agent("fake-model", base_url=server.base_url, api_key="k",
                             tools=[look]).run("look around")
    (ctx,) = seen
    assert "run" not in ctx.services
    assert isinstance(ctx.run, CallingRun)
    assert ctx.run.session_id == result.session_id
    assert [m.role for m in ctx.run.history][:2] == ["system", "user"]
    with pytest.raises(AttributeError):
        ctx.run.history = []  # type: ignore[misc]
    assert not hasattr(ctx.run, "replace_history") and not hasattr(ctx.run, "settings")


async def test_each_run_works_where_the_process_is_when_it_starts_under_ids_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Path, str | None, str]] = []

    @tool
    async def look(ctx: ToolContext) -> str:
        """Look around."""
        seen.append((ctx.workdir, ctx.session_id, ctx.run_id))
        return "looked"

    script = [Reply(tool_calls=[call("look", {})]), Reply("done")] * 2
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", tools=[look])
        for name in ("first", "second"):
            (tmp_path / name).mkdir()
            monkeypatch.chdir(tmp_path / name)  # no `workdir` setting: the current directory
            await agent.run("look around")
    assert [workdir for workdir, _, _ in seen] == [(tmp_path / name).resolve()
                                                   for name in ("first", "second")]
    ids = [key for _, session_id, run_id in seen for key in (session_id, run_id)]
    assert len(set(ids)) == 4
    assert all(re.fullmatch("[0-9a-f]{32}", str(key)) for key in ids)
