"""`loopwright mcp-server` as a user starts and stops it by hand: a port in use is one line
and exit 1, as `serve` says it; on stdio, Ctrl-C stops it (a new user's walk-through, item 9)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from loopwright.testing import FakeModelServer
from shared_helpers import cli_env, ctrl_c_on_a_terminal


def mcp_server(base_url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "loopwright", "mcp-server", "--model", "m", "--base-url",
            base_url, *extra]


def test_http_on_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with FakeModelServer([]) as fake, socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run(mcp_server(fake.base_url, "--http", "--port", str(port),
                                         "--token", "t" * 32),
                              cwd=tmp_path, env=cli_env(tmp_path), capture_output=True,
                              text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == (f"loopwright: cannot listen on 127.0.0.1:{port}: address already in "
                           "use; pass --host and --port with an address of this machine that is "
                           "free (--port 0: any)\n")


def test_on_stdio_ctrl_c_stops_it(tmp_path: Path) -> None:
    """From a terminal, as a user who started it by hand meets it: stdin is the terminal."""
    with FakeModelServer([]) as fake:
        waiting, status, rest = ctrl_c_on_a_terminal(mcp_server(fake.base_url), tmp_path)
    assert waiting.startswith("loopwright: waiting for MCP messages on stdin")
    assert status == 130, status
    assert "Traceback" not in rest
