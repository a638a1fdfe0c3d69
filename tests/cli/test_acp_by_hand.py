"""`loopwright acp` started by hand in a terminal stops at Ctrl-C, as its note says (mcp-server's
case: tests/mcp/test_mcp_server_cli_stops.py). A pseudo-terminal, not tmux: tmux's pane runs the
command under a shell that Ctrl-C may end too, taking the screen with it."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

from loopwright.testing import FakeModelServer
from shared_helpers import cli_env


def test_acp_on_a_terminal_stops_at_ctrl_c(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        with FakeModelServer([]) as fake:
            process = subprocess.Popen(
                [sys.executable, "-m", "loopwright", "acp", "--model", "m", "--base-url",
                 fake.base_url], cwd=tmp_path, env=cli_env(tmp_path), stdin=terminal,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert process.stderr is not None and process.stdout is not None
            waiting = process.stderr.readline()
            assert waiting.startswith("loopwright: waiting for Agent Client Protocol messages")
            assert "Ctrl-D or Ctrl-C stops" in waiting
            time.sleep(0.5)  # into the read
            process.send_signal(signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise AssertionError("acp ignored Ctrl-C") from None
            assert process.returncode in (0, 130), process.returncode
            assert "Traceback" not in process.stderr.read()
            process.stderr.close()
            process.stdout.close()
    finally:
        os.close(controller)
        os.close(terminal)
