"""The red-team harness: every attack goes through an `Agent` run against `FakeModelServer`, with
the real built-in tools, and must be stopped before anything runs.

The `bash` tool here is the real one behind a tripwire: it records every command that reaches it
and runs only the known-harmless twins for real. An attack that got past the policy is recorded
(the test fails) but never executed, so a broken policy cannot damage the machine running the
tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopwright import Agent, tool
from loopwright.builtin import default_tools
from loopwright.builtin.shell import bash as real_bash
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.base import Tool, ToolContext

FAST = RetryPolicy(base_delay=0.01, jitter=0)
TRIPPED = "TRIPWIRE: the attack reached the tool"


@dataclass
class Harness:
    """One workspace, the commands that reached `bash`, and the approvals that were asked."""

    workdir: Path
    runnable: set[str] = field(default_factory=set)
    reached: list[str] = field(default_factory=list)
    asked: list[tuple[str, str]] = field(default_factory=list)

    def bash_tool(self) -> Tool:
        harness = self

        @tool(name="bash")
        async def bash(command: str, ctx: ToolContext, cwd: str = ".") -> str:
            """Run a bash command (test harness: only known-harmless twins really run)."""
            harness.reached.append(command)
            if command not in harness.runnable:
                return TRIPPED
            return str(await real_bash.invoke(real_bash.validate({"command": command,
                                                                  "cwd": cwd}), ctx))

        return bash

    def tools(self) -> list[Tool]:
        return [self.bash_tool() if t.name == "bash" else t for t in default_tools()]

    async def run(self, *calls: tuple[str, dict[str, Any]], answer: Any = "no",
                  **agent_options: Any) -> list[str]:
        """Run one turn in which the model makes `calls`; the tool results, in call order.

        `answer` is what the user answers to approval requests (None: no user at all)."""

        async def approval(action: str, detail: str) -> Any:
            self.asked.append((action, detail))
            return answer

        agent_options.setdefault("tools", self.tools())
        if answer is not None:
            agent_options.setdefault("approval", approval)
        script = [Reply(tool_calls=[call(name, args) for name, args in calls]), Reply(text="ok")]
        with FakeModelServer(replies=script) as server:
            agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                          workdir=str(self.workdir), **agent_options)
            result = await agent.run("do it")
        return [m.content for m in result.messages if m.role == "tool"]


def make_workspace(tmp_path: Path) -> Harness:
    workdir = tmp_path / "work"
    for directory in ("build/sub", "x/y", "sub/inner", ".github/workflows", "docs"):
        (workdir / directory).mkdir(parents=True)
    for name, text in (("README.md", "hello\n"), ("notes.txt", "TOKEN=visible\n"),
                       ("payload.b64", "ZWNobyBoaQo=\n"), ("list", "x\n")):
        (workdir / name).write_text(text)
    return Harness(workdir=workdir)
