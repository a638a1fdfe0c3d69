"""A sub-agent works in its parent run's directory under the parent run's choice of `project`
(`Agent.run(workdir=, project=)`): a run started in another directory as a project gives its
child that project's instruction files too, and a run told its directory is no project
(`project=False`, a batch task's scratch directory) never gives its child the instructions
found there — whatever directory the agent itself was made for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.builtin.delegate import CHILD_PROMPT, make_delegate_tool
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call

CHILD_MARK = CHILD_PROMPT.splitlines()[0]
RULE = "Always answer in haiku (the project's own rule)."


def system_prompts(server: FakeModelServer) -> tuple[str, str]:
    """The parent's and the child's system prompts, as the server received them."""
    prompts = [request.body["messages"][0]["content"] for request in server.model_requests]
    child = next(p for p in prompts if CHILD_MARK in p)
    parent = next(p for p in prompts if CHILD_MARK not in p)
    return parent, child


def delegating(request: RecordedRequest) -> ScriptItem:
    messages = request.body["messages"]
    if CHILD_MARK in messages[0]["content"]:
        return Reply("child done")
    if any(m["role"] == "tool" for m in messages):
        return Reply("parent done")
    return Reply(tool_calls=[call("delegate", {"task": "look around"})])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    where = tmp_path / "project"
    where.mkdir()
    (where / "AGENTS.md").write_text(RULE + "\n")
    return where


def agent_in(server: FakeModelServer, workdir: Path, **kwargs: Any) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", workdir=workdir,
                 tools=[make_delegate_tool()], trust_project_files=True, **kwargs)


async def test_a_run_in_another_project_gives_its_child_that_projects_instructions(
        project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    with FakeModelServer(handler=delegating) as server:
        result = await agent_in(server, elsewhere).run("go", workdir=project)
        parent, child = system_prompts(server)
    assert result.output == "parent done"
    assert RULE in parent and RULE in child


async def test_a_run_whose_directory_is_no_project_gives_its_child_none(project: Path) -> None:
    with FakeModelServer(handler=delegating) as server:
        result = await agent_in(server, project).run("go", project=False)
        parent, child = system_prompts(server)
    assert result.output == "parent done"
    assert RULE not in parent and RULE not in child


async def test_a_scratch_directory_elsewhere_gives_its_child_none(project: Path) -> None:
    with FakeModelServer(handler=delegating) as server:
        await agent_in(server, project.parent).run("go", workdir=project, project=False)
        parent, child = system_prompts(server)
    assert RULE not in parent and RULE not in child


async def test_a_run_in_the_agents_own_project_gives_its_child_the_instructions(
        project: Path) -> None:
    with FakeModelServer(handler=delegating) as server:
        await agent_in(server, project).run("go")
        parent, child = system_prompts(server)
    assert RULE in parent and RULE in child


async def test_delegating_outside_a_run_is_in_the_agents_own_project(project: Path) -> None:
    with FakeModelServer([Reply("child done")]) as server:
        outcome = await agent_in(server, project).delegate("look around")
        (request,) = server.model_requests
    assert outcome.output == "child done"
    assert RULE in request.body["messages"][0]["content"]


def task_of(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "user")


def delegating_twice(request: RecordedRequest) -> ScriptItem:
    """The parent delegates "look around", whose child delegates "deeper"."""
    messages = request.body["messages"]
    task = task_of(request)
    if any(m["role"] == "tool" for m in messages):
        return Reply("done")
    if CHILD_MARK in messages[0]["content"] and task == "deeper":
        return Reply("grandchild done")
    return Reply(tool_calls=[call("delegate", {"task": "deeper" if CHILD_MARK in messages[0][
        "content"] else "look around"})])


@pytest.mark.parametrize("project_run", [True, False])
async def test_a_grandchild_takes_the_same_choice(project: Path, tmp_path: Path,
                                                  project_run: bool) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    with FakeModelServer(handler=delegating_twice) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k", workdir=elsewhere,
                      tools=[make_delegate_tool(max_depth=2)], trust_project_files=True)
        result = await agent.run("go", workdir=project, project=project_run)
        prompts = {task_of(r): r.body["messages"][0]["content"] for r in server.model_requests}
    assert result.output == "done" and set(prompts) == {"go", "look around", "deeper"}
    assert all((RULE in prompt) is project_run for prompt in prompts.values())
