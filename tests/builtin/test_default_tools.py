"""The default toolset, and how built-in tools run in batches through an Agent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loopwright import Agent, ConfigError
from loopwright.builtin import all_tools, default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
EXPECTED = ["read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob", "grep",
            "bash", "todo", "web_fetch", "clarify", "delegate"]


def test_default_tools_are_the_whole_builtin_set() -> None:
    assert [t.name for t in default_tools()] == EXPECTED


def test_read_only_keeps_only_tools_that_change_nothing() -> None:
    names = [t.name for t in default_tools(read_only=True)]
    assert names == ["read_file", "list_dir", "glob", "grep", "todo", "web_fetch", "clarify"]
    assert all(t.read_only for t in default_tools(read_only=True) if t.name != "todo")


def test_names_narrow_the_set_and_unknown_names_fail() -> None:
    assert [t.name for t in default_tools(names=["grep", "read_file"])] == ["read_file", "grep"]
    assert [t.name for t in default_tools(read_only=True, names=["bash", "grep"])] == ["grep"]
    with pytest.raises(ConfigError, match=r"unknown built-in tool.*nope"):
        default_tools(names=["nope"])


def test_core_coding_tools_are_core_and_every_tool_is_described() -> None:
    core = {t.name for t in all_tools() if t.core}
    assert {"read_file", "write_file", "edit_file", "apply_patch", "grep", "bash"} <= core
    assert "web_fetch" not in core
    for t in all_tools():
        assert len(t.description) > 40, t.name
        for name, prop in t.parameters["properties"].items():
            assert prop.get("description") or name == "todos", (t.name, name)


def test_a_library_agent_has_no_builtin_tools_unless_asked() -> None:
    assert len(Agent("m", base_url="http://127.0.0.1:9", api_key="k").registry) == 0


async def test_two_read_only_builtin_calls_in_one_reply_run_concurrently(tmp_path: Path) -> None:
    """Each read of a secrets file waits for approval on a shared two-party barrier: if the calls
    ran one after the other, the first would wait for ever (the guard breaks the barrier and
    the approval is refused)."""
    (tmp_path / ".env").write_text("A=1\n")
    (tmp_path / ".env.local").write_text("B=2\n")
    barrier = asyncio.Barrier(2)

    async def approve(action: str, detail: str) -> bool:
        try:
            await asyncio.wait_for(barrier.wait(), 10)
        except TimeoutError:
            return False
        return True

    script = [Reply(tool_calls=[call("read_file", {"path": ".env"}),
                                call("read_file", {"path": ".env.local"})]),
              Reply(text="read both")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), approval=approve)
        result = await agent.run("read the env files")
    contents = [m.content for m in result.messages if m.role == "tool"]
    assert contents == ["     1\tA=1\n", "     1\tB=2\n"]  # in call order


async def test_an_interactive_tool_makes_the_batch_sequential(tmp_path: Path) -> None:
    active = 0
    most_active = 0

    async def answer(question: str, options: list[str]) -> str:
        nonlocal active, most_active
        active += 1
        most_active = max(most_active, active)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        active -= 1
        return question.upper()

    script = [Reply(tool_calls=[call("clarify", {"question": "a?"}),
                                call("clarify", {"question": "b?"}),
                                call("grep", {"pattern": "x"})]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), clarify=answer)
        result = await agent.run("ask twice")
    assert most_active == 1
    contents = [m.content for m in result.messages if m.role == "tool"]
    assert contents[:2] == ["The user answered: A?", "The user answered: B?"]
