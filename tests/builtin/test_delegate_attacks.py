"""What a model (or text it read) can make the delegate tool do, through `Agent` against the
fake model server.

A model naming a child's model of another provider (`openrouter:…`) sent the task there with
the user's key from the environment, though the user ran against their own server only: the
task (whatever the parent put in it, such as a private file's contents) left for a provider the
user never chose. Now such a name is refused; a name without a prefix (the parent's endpoint)
and an alias the user set still go where they say.

A reply of many delegate calls ran as many children at once (forty model requests in flight,
and their events); now a run has a few child slots and a call waits for one within its timeout.

A run started in a directory of its own (`run(workdir=)`, as batch runs its tasks) gave its
child the agent's `workdir`: the child wrote outside the run's workspace. Now it works where
its parent's run does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.builtin.delegate import make_delegate_tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.testing.scripted import RecordedRequest

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@pytest.fixture
def other_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    """OpenRouter as the environment has it: the user's key, the URL of a server of ours."""
    with FakeModelServer([Reply("The other provider's answer.")], strict=False) as server:
        monkeypatch.setenv("LOOPWRIGHT_OPENROUTER_URL", server.base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-the-users-key")
        yield server


async def delegate_with(model: str, **options: Any) -> tuple[str, FakeModelServer]:
    """A parent on its own server delegating "Summarise PRIVATE-NOTES." with `model`: the
    delegate call's result and the parent's server."""
    script = [Reply(tool_calls=[call("delegate", {"task": "Summarise PRIVATE-NOTES.",
                                                  "model": model})]),
              Reply("The child's answer."), Reply("done")]
    with FakeModelServer(script, strict=False) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[make_delegate_tool()], **options)
        result = await agent.run("go")
    [delegated] = [str(m.content) for m in result.messages if m.role == "tool"]
    return delegated, server


async def test_a_child_model_of_another_provider_is_refused(
        other_provider: FakeModelServer) -> None:
    delegated, _ = await delegate_with("openrouter:some/model")
    assert "another provider" in delegated
    assert other_provider.model_requests == []  # the task never left


async def test_a_model_on_the_parents_endpoint_and_the_users_alias_still_go(
        other_provider: FakeModelServer) -> None:
    delegated, server = await delegate_with("small-model")
    assert "The child's answer." in delegated
    assert [(r.body or {}).get("model") for r in server.model_requests][1] == "small-model"
    delegated, _ = await delegate_with("cheap", aliases={"cheap": "openrouter:some/model"})
    assert "The other provider's answer." in delegated  # the user named it
    [request] = other_provider.model_requests
    assert "PRIVATE-NOTES" in str(request.body)


class Crowd:
    """A parent that delegates `calls` tasks in one reply; children that take a while to
    answer. `peak`: the most child requests in flight at once."""

    def __init__(self, calls: int, delay: float = 0.2) -> None:
        self.calls, self.delay, self.live, self.peak, self.started = calls, delay, 0, 0, False

    async def __call__(self, request: RecordedRequest) -> Reply:
        messages = (request.body or {})["messages"]
        if "sub-agent" not in messages[0]["content"]:  # the parent
            if self.started:
                return Reply("done")
            self.started = True
            return Reply(tool_calls=[call("delegate", {"task": f"Task {n}."})
                                     for n in range(self.calls)])
        self.live += 1  # the server answers on one event loop of its own: no lock needed
        self.peak = max(self.peak, self.live)
        await asyncio.sleep(self.delay)
        self.live -= 1
        return Reply(f"Answer to {messages[-1]['content']}")


async def test_a_reply_of_many_delegate_calls_runs_a_few_children_at_a_time() -> None:
    crowd = Crowd(12, delay=0.5)  # before: twelve children, twelve model requests at once
    with FakeModelServer(handler=crowd) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[make_delegate_tool()])
        result = await agent.run("go")
    answers = [str(m.content) for m in result.messages if m.role == "tool"]
    assert result.output == "done" and 1 < crowd.peak <= 4  # still in parallel
    assert [f"Answer to Task {n}." in answer for n, answer in enumerate(answers)] == [True] * 12


async def test_a_delegation_waiting_for_a_slot_spends_its_own_timeout() -> None:
    crowd = Crowd(3, delay=5)  # the first child holds the one slot until it times out
    with FakeModelServer(handler=crowd, strict=False) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[make_delegate_tool(max_concurrent=1, timeout=0.5)])
        result = await agent.run("go")
    answers = [str(m.content) for m in result.messages if m.role == "tool"]
    assert crowd.peak == 1 and "timed out after 0.5s" in answers[0]
    assert all("no sub-agent slot came free in 0.5s" in answer for answer in answers[1:])


async def write_through_a_child(tmp_path: Path, **run_options: Any
                                ) -> tuple[list[str], bool]:
    """An agent whose `workdir` is `tmp_path/agent` (instructions in its AGENTS.md, trusted)
    writes p.txt and has a child write c.txt: where the files are, relative to `tmp_path`, and
    whether the child was given the instructions."""
    (tmp_path / "agent").mkdir()
    (tmp_path / "task").mkdir()
    (tmp_path / "agent" / "AGENTS.md").write_text("Name every file you write.\n")
    script = [Reply(tool_calls=[call("write_file", {"path": "p.txt", "content": "parent"})]),
              Reply(tool_calls=[call("delegate", {"task": "Write c.txt."})]),
              Reply(tool_calls=[call("write_file", {"path": "c.txt", "content": "child"})]),
              Reply("Written."), Reply("done")]
    with FakeModelServer(script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", retry=FAST,
                      workdir=str(tmp_path / "agent"), trust_project_files=True,
                      tools=[*default_tools(names=["write_file"]), make_delegate_tool()])
        result = await agent.run("go", **run_options)
        child_prompt = str((server.model_requests[2].body or {})["messages"][0]["content"])
    assert result.output == "done"
    written = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*.txt"))
    return written, "Name every file you write." in child_prompt


async def test_a_child_works_in_its_parent_runs_directory(tmp_path: Path) -> None:
    # a run in a directory of its own (batch's tasks): before, its child wrote in the agent's
    # `workdir` (the batch's working directory), outside the task's workspace
    written, _ = await write_through_a_child(tmp_path, workdir=tmp_path / "task", project=False)
    assert written == ["task/c.txt", "task/p.txt"]


async def test_a_child_of_a_run_in_the_agents_directory_works_there(tmp_path: Path) -> None:
    # as before: there, and with the project's instructions
    assert await write_through_a_child(tmp_path) == (["agent/c.txt", "agent/p.txt"], True)
