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
                      retry=FAST, tools=default_tools(),
                      workdir=str(workdir), approval=approval, approve_all=approve_all,
                      **settings)
        result = await agent.run("go")
    return tool_results(result.messages), asked


FAST = RetryPolicy(base_delay=0.01, jitter=0)
PYTHON = os.path.realpath(sys.executable)  # one version inside and outside: one magic number


async def command_result(workdir: Path, command: str) -> str:
    """The result of a scripted model's one `bash` call in `workdir` (everything approved)."""
    script = [Reply(tool_calls=[call("bash", {"command": command})]), Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(workdir), approve_all=True)
        result = await agent.run("go")
    [text] = tool_results(result.messages)
    return text


def host_python(workdir: Path, code: str) -> subprocess.CompletedProcess[str]:
    """The user's Python, outside the sandbox (the tests, the app), writing its caches."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    return subprocess.run([PYTHON, "-c", code], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=30, check=False)


def host_git(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's git (and VS Code's git extension), outside the sandbox."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(workdir.parent)}
    return subprocess.run(["git", *args], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=30, check=False)


def plant_pyc(canary: Path, python: str = PYTHON, source: str = "app.py", *,
              unchecked: bool = False) -> str:
    """A command writing `source`'s cached module with code touching `canary`, its header made
    to match the unchanged source (rewritten in place where one exists: the same inode), or,
    `unchecked`, a hash-based one Python never checks against its source."""
    return f"""{python} - <<'EOF'
import importlib.util, marshal, pathlib, sys
source = pathlib.Path({source!r})
info = source.stat()
cached = source.parent / "__pycache__" / f"{{source.stem}}.{{sys.implementation.cache_tag}}.pyc"
cached.parent.mkdir(exist_ok=True)
code = compile("import pathlib; pathlib.Path({str(canary)!r}).touch()", str(source), "exec")
if {unchecked!r}:
    header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + bytes(8)
else:
    header = importlib.util.MAGIC_NUMBER + bytes(4) + (int(info.st_mtime) & 0xFFFFFFFF
        ).to_bytes(4, "little") + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little")
cached.write_bytes(header + marshal.dumps(code))
print("planted", cached)
EOF"""


def app(workdir: Path) -> Path:
    workdir.mkdir(exist_ok=True)
    (workdir / "app.py").write_text("print('the real app')\n")
    return workdir


def fsmonitor(canary: Path) -> str:
    return f"touch {canary}; false"
