"""`loopwright acp` started by hand in a terminal stops at Ctrl-C, as its note says (mcp-server's
case: tests/mcp/test_mcp_server_cli_stops.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from loopwright.testing import FakeModelServer
from shared_helpers import ctrl_c_on_a_terminal


def test_acp_on_a_terminal_stops_at_ctrl_c(tmp_path: Path) -> None:
    with FakeModelServer([]) as fake:
        waiting, status, rest = ctrl_c_on_a_terminal(
            [sys.executable, "-m", "loopwright", "acp", "--model", "m", "--base-url",
             fake.base_url], tmp_path)
    assert waiting.startswith("loopwright: waiting for Agent Client Protocol messages")
    assert "Ctrl-D or Ctrl-C stops" in waiting
    assert status in (0, 130), status
    assert "Traceback" not in rest
