"""Project context files (issue 11, item 7): an AGENTS.md that resolves outside the workspace
is never sent to the model; a link inside the project still is."""

from __future__ import annotations

import json
from pathlib import Path

from loopwright import Agent
from loopwright.testing import FakeModelServer, Reply
from loopwright.trust import TrustStore, project_digest


async def sent_system_text(workdir: Path) -> str:
    with FakeModelServer([Reply("ok")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", workdir=str(workdir))
        result = await agent.run("hello")
        body = server.model_requests[0].body
    assert result.stop_reason == "completed"
    return json.dumps(body)


async def test_attack_agents_md_linked_outside_the_workspace_is_not_sent(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("TOP-SECRET-DEPLOY-KEY-123\n")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "AGENTS.md").symlink_to(outside)
    assert "TOP-SECRET-DEPLOY-KEY-123" not in await sent_system_text(project)


async def test_twin_a_link_inside_the_project_is_read_once(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "AGENTS.md").write_text("Use tabs, never spaces (house rule 7).\n")
    (project / "CLAUDE.md").symlink_to(project / "AGENTS.md")
    TrustStore().trust(project.resolve(), project_digest(project))  # issue 29: trusted content
    sent = await sent_system_text(project)
    assert sent.count("house rule 7") == 1
