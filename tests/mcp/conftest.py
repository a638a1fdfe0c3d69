"""Real MCP servers for the MCP tests.

- The npm reference servers (`server-everything`, `server-filesystem`, `server-memory`) run from
  `tests/mcp/node_modules`, installed from `package-lock.json` with `npm ci --prefix tests/mcp`
  (done here when missing, so a plain `pytest` works on a machine with node and npm).
- `http_server.py` is an MCP server on the `mcp` SDK, served over streamable HTTP on 127.0.0.1.

This directory has no `__init__.py` on purpose: as a package named `mcp` it would shadow the SDK.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SERVERS = HERE / "node_modules" / "@modelcontextprotocol"


def _install_node_servers() -> None:
    npm = shutil.which("npm")
    assert npm, "the MCP tests need node and npm (node 20+) on PATH"
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(HERE)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"npm ci --prefix tests/mcp failed:\n{done.stderr}"


@pytest.fixture(scope="session")
def node_servers() -> Path:
    """The folder holding the reference servers' packages."""
    if not (SERVERS / "server-everything" / "dist" / "index.js").is_file():
        _install_node_servers()
    return SERVERS


@pytest.fixture(scope="session")
def everything(node_servers: Path) -> str:
    return str(node_servers / "server-everything" / "dist" / "index.js")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def http_server_url() -> Iterator[str]:
    """`http_server.py` in a subprocess (one for the session: it keeps no state between
    sessions); its MCP endpoint URL."""
    yield from _served()


@pytest.fixture(scope="session")
def json_server_url() -> Iterator[str]:
    """As `http_server_url`, the server answering with JSON bodies, not event streams."""
    yield from _served("json")


def _served(*options: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(HERE / "http_server.py"), str(port),
                                *options],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the HTTP MCP server exited at start-up"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP MCP server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _process_gone(pid: int) -> bool:
    """True once `pid` is dead (a zombie counts: it runs no more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def kill_and_wait(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not _process_gone(pid):
        assert time.monotonic() < deadline, f"process {pid} survived SIGKILL"
        time.sleep(0.01)


@pytest.fixture
def kill_process() -> Callable[[int], None]:
    """`kill_process(pid)`: SIGKILL a server process and wait until it is dead."""
    return kill_and_wait


@pytest.fixture(name="process_gone")
def process_gone_fixture() -> Callable[[int], bool]:
    """`process_gone(pid)`: True once the process is dead."""
    return _process_gone
