"""A file change that waits for the user's approval shows the diff it would make: the tool's
`preview` below the reason in the approval's detail, for protected files (asked by the tool) and
for policy `ask` rules (asked by the gate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


async def asked_about(workdir: Path, tool_name: str, arguments: dict[str, Any],
                      **agent_options: Any) -> list[tuple[str, str]]:
    """The (action, detail) pairs the approval callback saw; it declines each."""
    asked: list[tuple[str, str]] = []

    async def decline(action: str, detail: str) -> bool:
        asked.append((action, detail))
        return False

    script = [Reply(tool_calls=[call(tool_name, arguments)]), Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approval=decline,
                      **agent_options)
        await agent.run("change it")
    return asked


async def test_writing_a_protected_file_shows_the_diff_before_asking(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text("approve_all = false\n")
    ((action, detail),) = await asked_about(
        tmp_path, "write_file", {"path": "loopwright.toml", "content": "approve_all = true\n"})
    assert action == "write_protected"
    assert detail == ("write loopwright.toml (it is a loopwright configuration file)\n"
                      "--- a/loopwright.toml\n+++ b/loopwright.toml\n@@ -1 +1 @@\n"
                      "-approve_all = false\n+approve_all = true")
    assert (tmp_path / "loopwright.toml").read_text() == "approve_all = false\n"


async def test_patching_a_git_hook_shows_the_patched_result(tmp_path: Path) -> None:
    hook = tmp_path / ".git" / "hooks" / "pre-push"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\nexit 0\n")
    patch = "--- a/.git/hooks/pre-push\n+++ b/.git/hooks/pre-push\n@@ -2 +2 @@\n-exit 0\n+exit 1\n"
    ((_, detail),) = await asked_about(tmp_path, "apply_patch", {"patch": patch})
    assert detail.startswith("patch .git/hooks/pre-push (git runs commands from it)\n")
    assert " #!/bin/sh\n-exit 0\n+exit 1" in detail


async def test_an_edit_that_cannot_apply_asks_without_a_diff(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text("approve_all = false\n")
    ((_, detail),) = await asked_about(tmp_path, "edit_file", {
        "path": "loopwright.toml", "old_string": "not there", "new_string": "x"})
    assert detail == "edit loopwright.toml (it is a loopwright configuration file)"


async def test_a_policy_ask_rule_shows_the_diff_of_the_edit(tmp_path: Path) -> None:
    (tmp_path / "deploy.yml").write_text("replicas: 1\nimage: app\n")
    ((action, detail),) = await asked_about(
        tmp_path, "edit_file", {"path": "deploy.yml", "old_string": "replicas: 1",
                                "new_string": "replicas: 9"},
        policy={"edit_file": {"ask": [r"^deploy\.yml$"]}})
    assert action.startswith("edit_file: matches the ask rule")
    assert detail.startswith("deploy.yml\n--- a/deploy.yml\n+++ b/deploy.yml\n")
    assert "-replicas: 1\n+replicas: 9\n image: app" in detail


async def test_no_preview_is_made_when_nobody_is_asked(tmp_path: Path) -> None:
    calls: list[str] = []
    tools = default_tools()
    edit = next(t for t in tools if t.name == "edit_file")
    real_preview = edit.preview
    assert real_preview is not None

    async def counting(arguments: dict[str, Any], ctx: Any) -> str:
        calls.append(arguments["path"])
        return await real_preview(arguments, ctx)

    edit.preview = counting
    try:
        (tmp_path / "deploy.yml").write_text("replicas: 1\n")
        script = [Reply(tool_calls=[call("edit_file", {"path": "deploy.yml",
                                                       "old_string": "1", "new_string": "2"})]),
                  Reply(text="ok")]
        with FakeModelServer(replies=script) as server:
            agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST, tools=tools,
                          workdir=str(tmp_path), approve_all=True,
                          policy={"edit_file": {"ask": ["deploy"]}})
            await agent.run("edit")
    finally:
        edit.preview = real_preview
    assert (tmp_path / "deploy.yml").read_text() == "replicas: 2\n"
    assert calls == []
