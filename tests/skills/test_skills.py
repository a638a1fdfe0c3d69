"""Skills (SKILL.md folders) through `Agent` against the fake model server in every API mode:
discovery from the project, the settings and the user config dir, the listing in the static
prompt, the `skill` tool, the skill's files through the file tools, and resuming a session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.wire.base import CACHE_BOUNDARY

FAST = RetryPolicy(base_delay=0.01, jitter=0)
MODES = ["chat_completions", "anthropic_messages", "responses"]
BODY_MARK = "Step one: run the checklist in checklist.md"


def write_skill(root: Path, folder: str, front: str, body: str = BODY_MARK,
                files: dict[str, str] | None = None) -> Path:
    directory = root / folder
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(f"---\n{front}\n---\n\n{body}\n", encoding="utf-8")
    for name, text in (files or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def user_skills(home: Path) -> Path:
    return home / ".config" / "loopwright" / "skills"


def make_agent(server: FakeModelServer, workdir: Path, events: list[Event], mode: str,
               **kw: Any) -> Agent:
    # these tests are about skills; an untrusted project's are left out (test_trust_content.py)
    kw.setdefault("trust_project_files", True)
    return Agent("m", base_url=server.base_url, api_key="k", api_mode=mode, retry=FAST,
                 workdir=str(workdir), tools=default_tools(), callbacks=[events.append], **kw)


def statuses(events: list[Event], kind: str) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == kind]


def system_text(body: dict[str, Any]) -> str:
    """The system prompt of a recorded request, whatever the wire format."""
    if "system" in body:  # anthropic_messages: text blocks
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    if "instructions" in body:  # responses
        return str(body["instructions"])
    items = body.get("messages") or body.get("input") or []
    return "".join(str(m.get("content")) for m in items if m.get("role") in ("system", "developer"))


@pytest.mark.parametrize("mode", MODES)
async def test_listing_in_the_static_prompt_then_the_skill_and_its_user_dir_file_load_on_demand(
        tmp_path: Path, isolated_home: Path, mode: str) -> None:
    workdir = tmp_path / "project"
    write_skill(workdir / ".claude" / "skills", "release",
                "name: release\ndescription: Cut a release of this project")
    write_skill(user_skills(isolated_home), "pdf-forms",
                "name: pdf-forms\ndescription: >\n  Fill PDF forms;\n  use for any PDF form.",
                files={"checklist.md": "USER-SKILL-CHECKLIST"})
    checklist = user_skills(isolated_home) / "pdf-forms" / "checklist.md"
    events: list[Event] = []
    script = [Reply(tool_calls=[call("skill", {"name": "pdf-forms"})]),
              Reply(tool_calls=[call("read_file", {"path": str(checklist)})]),
              Reply("done")]
    with FakeModelServer(script) as server:
        agent = make_agent(server, workdir, events, mode)
        result = await agent.run("fill the form")
        first, second, third = (r.body for r in server.model_requests)
    assert result.stop_reason == "completed", result.error
    static = system_text(first).split(CACHE_BOUNDARY.strip())[0]
    assert "- pdf-forms: Fill PDF forms; use for any PDF form." in static
    assert "- release: Cut a release of this project" in static
    assert BODY_MARK not in json.dumps(first)  # only names and descriptions up front
    assert BODY_MARK in json.dumps(second)  # the skill tool's result
    assert "USER-SKILL-CHECKLIST" in json.dumps(third)  # read_file reached the user skill
    assert "checklist.md" in json.dumps(second)  # the files beside it are listed
    loaded = statuses(events, "skill_loaded")
    assert [(e.data["name"], e.data["source"], e.data["already_loaded"]) for e in loaded] == [
        ("pdf-forms", "user", False)]


async def test_the_static_prefix_is_byte_identical_across_runs(tmp_path: Path) -> None:
    write_skill(tmp_path / ".loopwright" / "skills", "a", "name: a\ndescription: first")
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        agent = make_agent(server, tmp_path, [], "chat_completions")
        await agent.run("x")
        await agent.run("y")
        prompts = [system_text(r.body) for r in server.model_requests]
    heads = [p.split(CACHE_BOUNDARY.strip())[0] for p in prompts]
    assert heads[0] == heads[1] and "- a: first" in heads[0]


async def test_a_user_skill_folder_is_readable_but_never_writable(
        tmp_path: Path, isolated_home: Path) -> None:
    folder = write_skill(user_skills(isolated_home), "s", "name: s\ndescription: d",
                         files={"notes.md": "original"})
    outside = isolated_home / ".config" / "loopwright" / "loopwright.toml"
    outside.write_text("# the user's config, not a skill\n", encoding="utf-8")
    script = [Reply(tool_calls=[call("write_file", {"path": str(folder / "notes.md"),
                                                    "content": "changed"})]),
              Reply(tool_calls=[call("list_dir", {"path": str(folder)})]),
              Reply(tool_calls=[call("read_file", {"path": str(outside)})]),
              Reply("ok")]
    with FakeModelServer(script) as server:
        agent = make_agent(server, tmp_path, [], "chat_completions", approve_all=True)
        await agent.run("go")
        results = [r.body["messages"][-1]["content"] for r in server.model_requests[1:]]
    assert "outside the workspace" in results[0]
    assert (folder / "notes.md").read_text() == "original"
    assert "notes.md" in results[1] and "SKILL.md" in results[1]
    assert "outside the workspace" in results[2]  # only the skills folder, not the config dir


async def test_a_resumed_session_knows_which_skills_were_loaded(tmp_path: Path) -> None:
    write_skill(tmp_path / ".agents" / "skills", "deploy", "name: deploy\ndescription: Deploy")
    store = str(tmp_path / "sessions.db")
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=[call("skill", {"name": "deploy"})]), Reply("ok"),
                          Reply(tool_calls=[call("skill", {"name": "deploy"})]),
                          Reply("ok again")]) as server:
        first = await make_agent(server, tmp_path, events, "chat_completions",
                                 store=store).run("deploy it")
        resumed = make_agent(server, tmp_path, events, "chat_completions", store=store,
                             session_id=first.session_id)
        await resumed.run("and again")
        last = server.model_requests[-1].body["messages"][-1]["content"]
    assert "already loaded earlier in this conversation" in last
    assert [e.data["already_loaded"] for e in statuses(events, "skill_loaded")] == [False, True]


async def test_precedence_project_over_settings_over_user_and_unknown_names(
        tmp_path: Path, isolated_home: Path) -> None:
    write_skill(tmp_path / ".loopwright" / "skills", "one", "name: dup\ndescription: project")
    write_skill(tmp_path / "extra", "two", "name: dup\ndescription: settings")
    write_skill(tmp_path / "extra", "three", "name: only-settings\ndescription: s")
    write_skill(user_skills(isolated_home), "four", "name: dup\ndescription: user")
    script = [Reply(tool_calls=[call("skill", {"name": "nope"})]), Reply("ok")]
    with FakeModelServer(script) as server:
        agent = make_agent(server, tmp_path, [], "chat_completions", skill_paths=["extra"])
        await agent.run("x")
        prompt = system_text(server.model_requests[0].body)
        error = server.model_requests[1].body["messages"][-1]["content"]
    assert "- dup: project" in prompt and "- dup: settings" not in prompt
    assert "- only-settings: s" in prompt
    assert [s.root.source for s in agent.skills.catalog.shadowed] == ["settings", "user"]
    assert "no skill named 'nope'" in error and "dup" in error


async def test_skills_off_means_no_tool_and_no_listing(tmp_path: Path) -> None:
    write_skill(tmp_path / ".loopwright" / "skills", "a", "name: a\ndescription: first")
    with FakeModelServer([Reply("hi")]) as server:
        await make_agent(server, tmp_path, [], "chat_completions", skills=False).run("x")
        body = server.model_requests[0].body
    assert "# Skills" not in system_text(body)
    assert "skill" not in [t["function"]["name"] for t in body["tools"]]


@pytest.mark.parametrize("engine", ["python", "ripgrep"])
async def test_grep_searches_a_user_skill_folder_like_read_file_does(
        tmp_path: Path, isolated_home: Path, engine: str) -> None:
    import shutil

    from loopwright.builtin.search import make_grep
    from shared_helpers import require_component

    if engine == "ripgrep":
        require_component(shutil.which("rg") is not None, "ripgrep: apt-get install -y ripgrep")
    folder = write_skill(user_skills(isolated_home), "s", "name: s\ndescription: d",
                         files={"notes.md": "NEEDLE-IN-USER-SKILL"})
    secret_dir = isolated_home / ".config" / "loopwright"
    (secret_dir / "loopwright.toml").write_text("# NEEDLE\n", encoding="utf-8")
    tools = [t for t in default_tools() if t.name != "grep"] + [make_grep(engine)]  # type: ignore[arg-type]
    script = [Reply(tool_calls=[call("grep", {"pattern": "NEEDLE", "path": str(folder)})]),
              Reply(tool_calls=[call("grep", {"pattern": "NEEDLE", "path": str(secret_dir)})]),
              Reply("ok")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      workdir=str(tmp_path), tools=tools)
        await agent.run("go")
        results = [r.body["messages"][-1]["content"] for r in server.model_requests[1:]]
    assert "notes.md:1:NEEDLE-IN-USER-SKILL" in results[0], results[0]
    assert "outside the workspace" in results[1]  # only the skills root, not the config dir
