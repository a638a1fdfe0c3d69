"""Spilled outputs in a delegation tree (real bubblewrap): a parent's commands read what its
sub-agents spilled (a child's answer names the path), and nothing else changes — a child does
not read its parent's spills nor its sibling's, and another session reads none of them.

Before, a child's spills lay in a session directory of its own beside its parent's, hidden
from the parent's commands like any other session's: the path the child's answer named was
"No such file" to the parent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from test_spill_sessions import (  # noqa: F401 (place: a fixture)
    FAST,
    loud,
    place,
    run_calls,
    spill_root,
    spilled_path,
)

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.builtin.delegate import make_delegate_tool
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.testing.scripted import RecordedRequest

pytestmark = pytest.mark.usefixtures("needs_bwrap")

Step = Reply | Callable[[], Reply]


class Script:
    """Replies in order; a step that is a function is called when its request comes, so it can
    name a path an earlier result gave (`spills`: the spill paths seen so far, in order)."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.spills: list[Path] = []
        self.results: list[str] = []  # of each step's call: the next request's last message

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.body or {}
        last = body.get("messages", [{}])[-1]
        self.results.append(str(last["content"]) if last.get("role") == "tool" else "")
        for message in body.get("messages", []):
            if message.get("role") == "tool" and "Full output saved to" in str(message["content"]):
                path = spilled_path(str(message["content"]))
                if path not in self.spills:
                    self.spills.append(path)
        step = self.steps.pop(0)
        return step() if callable(step) else step


def bash(command: str) -> Reply:
    return Reply(tool_calls=[call("bash", {"command": command})])


def delegate(task: str) -> Reply:
    return Reply(tool_calls=[call("delegate", {"task": task, "tools": ["bash"]})])


async def test_a_parent_reads_its_childs_spill_and_nobody_else_does(
        place: Path) -> None:  # noqa: F811 (the fixture)
    project = place / "project"
    project.mkdir()
    script = Script([])
    parent_spill = lambda: script.spills[0]  # noqa: E731
    child_spill = lambda: script.spills[1]  # noqa: E731
    script.steps = [
        bash(loud("PARENT-SECRET")),  # the parent spills
        delegate("Print the log."),
        bash(loud("CHILD-SECRET")),  # child 1 spills
        lambda: bash(f"cat {parent_spill()}; echo end"),  # and looks at its parent's
        lambda: bash(f"sed -n '1000p' {child_spill()}; echo end"),  # and reads its own
        lambda: Reply(f"The log is saved at {child_spill()}."),
        lambda: bash(f"sed -n '1000p' {child_spill()}; echo end"),  # the parent reads it
        delegate("Look at the log."),
        lambda: bash(f"cat {child_spill()}; echo end"),  # child 2, its sibling
        Reply("Nothing there."),
        Reply("done"),
    ]
    with FakeModelServer(handler=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[*default_tools(names=["bash"]), make_delegate_tool()],
                      workdir=str(project), session_id="parent", context_window=8_192)
        result = await agent.run("go")
    assert result.output == "done" and not script.steps
    to_parent_spill, own, read_by_parent, to_sibling = (script.results[n + 1]
                                                        for n in (3, 4, 6, 8))
    assert re.search(r"line \d+ CHILD-SECRET\nend\n", own), own
    assert re.search(r"line \d+ CHILD-SECRET\nend\n", read_by_parent), read_by_parent
    assert script.spills[1].is_relative_to(script.spills[0].parent)  # the child's inside
    assert "PARENT-SECRET" not in to_parent_spill and "No such file" in to_parent_spill
    assert "CHILD-SECRET" not in to_sibling and "No such file" in to_sibling
    # another session (the same project) reads neither, nor sees their directories
    read, listed = await run_calls(project, "other", [
        ("bash", {"command": f"cat {script.spills[1]} {script.spills[0]}; echo end"}),
        ("bash", {"command": f"ls -AR {spill_root(place)}"})])
    assert "SECRET" not in read and read.count("No such file") == 2
    assert script.spills[0].parent.name not in listed
    assert script.spills[1].parent.name not in listed


async def test_read_file_of_a_parent_reads_its_childs_spill_and_not_the_reverse(
        place: Path) -> None:  # noqa: F811 (the fixture)
    # a workspace that holds the cache: the file tools could reach every spill
    script = Script([])
    script.steps = [
        bash(loud("PARENT-SECRET")),
        Reply(tool_calls=[call("delegate", {"task": "Print the log.",
                                            "tools": ["bash", "read_file"]})]),
        bash(loud("CHILD-SECRET")),
        lambda: Reply(tool_calls=[call("read_file", {"path": str(script.spills[0])})]),
        Reply("Printed."),
        lambda: Reply(tool_calls=[call("read_file", {"path": str(script.spills[1]),
                                                     "offset": 1000, "limit": 1})]),
        Reply("done"),
    ]
    with FakeModelServer(handler=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[*default_tools(names=["bash", "read_file"]), make_delegate_tool()],
                      workdir=str(place), session_id="parent", context_window=8_192)
        result = await agent.run("go")
    assert result.output == "done" and not script.steps
    to_parent_spill, read_by_parent = script.results[4], script.results[6]
    assert "CHILD-SECRET" in read_by_parent, read_by_parent
    assert "PARENT-SECRET" not in to_parent_spill
    assert "another session's spilled output" in to_parent_spill
