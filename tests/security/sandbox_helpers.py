"""Helpers shared by the sandbox tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.messages import Message
from loopwright.testing import FakeModelServer, Reply, call


def tool_results(messages: list[Message]) -> list[str]:
    return [str(m.content) for m in messages if m.role == "tool"]


def cli(server: FakeModelServer, cwd: Path, *args: str, **env: str
        ) -> subprocess.CompletedProcess[str]:
    """`loopwright run go` against `server`, in `cwd`, with extra environment variables."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LOOPWRIGHT_")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "run", "go", "--model", "m", "--base-url",
         server.base_url, "--api-key", "k", *args],
        cwd=cwd, env=environ, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL)


async def run_calls_asking(workdir: Path, *calls: tuple[str, dict[str, Any]],
                           approve_all: bool = False, **settings: Any
                           ) -> tuple[list[str], list[str]]:
    """One run of the built-in tools in `workdir` making `calls` (a turn each): the results,
    and what was asked (each question answered no)."""
    asked: list[str] = []

    def approval(action: str, detail: str) -> bool:
        asked.append(detail)
        return False

    script = [*(Reply(tool_calls=[call(name, arguments)]) for name, arguments in calls),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k",
                      retry=RetryPolicy(base_delay=0.01, jitter=0), tools=default_tools(),
                      workdir=str(workdir), approval=approval, approve_all=approve_all,
                      **settings)
        result = await agent.run("go")
    return tool_results(result.messages), asked
