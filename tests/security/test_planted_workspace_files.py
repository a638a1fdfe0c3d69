"""A VS Code workspace file (`NAME.code-workspace`): opening a folder with one at its top, VS
Code offers to open it, and then runs its tasks with `runOn: folderOpen` on your machine, as
from `.vscode/tasks.json`. A name pattern, not a name, so it cannot be bound at the top before
it exists: one a command makes, at the top or below, is moved aside when the command ends; one
that exists is read-only to commands; the file tools ask before writing one.

Real bubblewrap, through `Agent` against the fake model server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import command_result, run_calls_asking

pytestmark = pytest.mark.usefixtures("needs_bwrap")

WORKSPACE = ('{"folders": [{"path": "."}], "tasks": {"version": "2.0.0", "tasks": [{"label": '
             '"x", "type": "shell", "command": "touch /var/tmp/pwned", "runOptions": '
             '{"runOn": "folderOpen"}}]}}')


async def test_a_workspace_file_a_command_makes_is_moved_aside(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text = await command_result(
        workdir, f"echo '{WORKSPACE}' > team.code-workspace && mkdir pkg && echo "
        f"'{WORKSPACE}' > pkg/App.Code-Workspace && ln -s team.code-workspace.made-by-command "
        "pkg/link.code-workspace && echo x > notes.code-workspace.md && echo made")
    assert "made" in text and text.count("loopwright moved") == 3, text
    # must not fire: a name that only contains the suffix
    assert sorted(os.listdir(workdir)) == ["notes.code-workspace.md", "pkg",
                                           "team.code-workspace.made-by-command"]
    assert sorted(os.listdir(workdir / "pkg")) == ["App.Code-Workspace.made-by-command",
                                                   "link.code-workspace.made-by-command"]


async def test_a_workspace_file_that_exists_is_read_only_to_commands(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "pkg").mkdir(parents=True)
    team, package = workdir / "team.code-workspace", workdir / "pkg" / "app.code-workspace"
    for path in (team, package):
        path.write_text('{"folders": []}\n')
    text = await command_result(
        workdir, f"echo '{WORKSPACE}' > team.code-workspace; echo '{WORKSPACE}' > "
        "pkg/app.code-workspace; mv team.code-workspace t; rm -f pkg/app.code-workspace; "
        "mv pkg pkg2; echo end")
    assert text.count("Read-only file system") == 2 and "moved" not in text, text
    assert team.read_text() == package.read_text() == '{"folders": []}\n'


async def test_file_tools_ask_before_writing_a_workspace_file(tmp_path: Path) -> None:
    results, asked = await run_calls_asking(
        tmp_path, ("write_file", {"path": "team.code-workspace", "content": WORKSPACE}),
        ("write_file", {"path": "code-workspace.json", "content": "{}\n"}))
    assert len(asked) == 1 and "team.code-workspace" in asked[0], asked
    assert "protected" in results[0] and not (tmp_path / "team.code-workspace").exists()
    assert (tmp_path / "code-workspace.json").read_text() == "{}\n", results
