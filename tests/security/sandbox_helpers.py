"""Helpers shared by the sandbox tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from loopwright.messages import Message
from loopwright.testing import FakeModelServer


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
