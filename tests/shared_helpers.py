"""Helpers shared by tests in every directory: `from shared_helpers import require_component`."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
import select
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


def require_component(available: bool, why: str) -> None:
    """Skip a test whose real component (bwrap, PostgreSQL, Chromium, model weights…) is absent.

    Locally the skip names what is missing and how to get it; on CI (``CI=true``) the component is
    installed by ``.ci/run``, so its absence is a failure, never a silent skip.
    """
    if available:
        return
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"required on CI but missing: {why}")
    pytest.skip(why)


TAG = f"300.{os.getpid():07d}"
"""Start of a unique `sleep` duration (`f"sleep {TAG}11"`): test runs of other checkouts on the
same machine never share a marker with this one."""


def live_processes(fragment: str) -> list[int]:
    """Host PIDs of live processes (zombies excluded) whose command line contains `fragment`.

    Sandboxed commands live in their own PID namespace, so `$$` inside them is no host PID: tests
    find them by a unique word in the command line instead (e.g. `sleep 30.417`)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if fragment.encode() in cmdline and state != "Z" and int(entry) != os.getpid():
            found.append(int(entry))
    return found


async def wait_until(check: Callable[[], bool], what: str, limit: float = 20.0) -> None:
    """Poll `check` until it holds; fail naming `what` after `limit` seconds (a guard against
    hanging, not a timing assert: kills and starts are asynchronous)."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}")
        await asyncio.sleep(0.01)


def trust_project(directory: Path) -> None:
    """Trust `directory`'s loopwright.toml as `loopwright trust` does, so its settings that
    loosen safety (hooks, allow rules, fallbacks with their own server, …) apply."""
    from loopwright.trust import TrustStore, digest

    TrustStore().trust(directory.resolve(), digest((directory / "loopwright.toml").read_bytes()))


# A port bound but never listening: connecting to it is refused at once, for as long as this
# process lives (a fixed "unused" port could be taken by anything on the machine).
_REFUSER = socket.socket()
_REFUSER.bind(("127.0.0.1", 0))
REFUSED_URL = f"http://127.0.0.1:{_REFUSER.getsockname()[1]}/v1"
"""A base URL where nothing answers (connection refused)."""

PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")
LOCAL_SERVER_URLS = {f"LOOPWRIGHT_{name}_URL": REFUSED_URL
                     for name in ("OLLAMA", "LMSTUDIO", "LLAMACPP", "VLLM")}
"""Where provider detection looks for local servers in tests: nowhere that answers, so no test
depends on what listens on 11434, 1234, 8080 or 8000 of the machine it runs on."""


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment for a `loopwright` subprocess: the caller's, without provider keys,
    LOOPWRIGHT_* or XDG_* settings, with HOME at `home` and local-server detection pointed at
    `REFUSED_URL` (then `extra` on top)."""
    env = {key: value for key, value in os.environ.items()
           if key not in PROVIDER_VARIABLES and not key.startswith(("LOOPWRIGHT_", "XDG_"))}
    env["HOME"] = str(home)
    env.update(LOCAL_SERVER_URLS)
    env.update(extra)
    return env


@contextlib.contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A small HTTP server on a free loopback port, on a thread; yields its root URL
    (`http://127.0.0.1:PORT`, no trailing slash) and stops it afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def small_model_weights() -> tuple[Path, bool]:
    """Where the 0.5B GGUF weights are cached, and whether they and llama.cpp's server are
    here. Call it at import: the autouse fixture later points XDG_CACHE_HOME at a temp dir."""
    from loopwright.testing.llamacpp import (
        model_spec,
        weights_path,
        weights_present,
        xllamacpp_importable,
    )

    spec = model_spec("0.5b")
    return weights_path(spec), weights_present(spec) and xllamacpp_importable()


# Qwen2.5-Coder-1.5B, prompt mode, bench task `missing_file` ("What does missing.txt say? Read
# it."): three made-up results, never a call
MISSING_FILE_MADE_UP = (
    '<tool_response>\n{\n  "output": "The file missing.txt does not exist in the workspace."\n}'
    '\n</tool_response>',
    '<tool_response>\n{\n  "content": "The file \'missing.txt\' does not exist in the workspace."'
    '\n}\n</tool_response>',
    '<tool_response>\n{\n  "content": "The file missing.txt does not exist in the workspace."\n}'
    '\n</tool_response>',
)


def wait_for_child(condition: Callable[[], Any], child: subprocess.Popen[str]) -> None:
    """Wait until `condition()` holds; fail if `child` ends first or after 30 s."""
    deadline = time.monotonic() + 30
    while not condition():
        if child.poll() is not None:
            pytest.fail(f"the child ended early: {child.stderr.read() if child.stderr else ''}")
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the child")
        time.sleep(0.02)


def killed_once(command: list[str], marker: Path) -> None:
    """Run `command` until it makes `marker`, then kill it with SIGKILL (a crash just there)."""
    process = subprocess.Popen(command, text=True, stderr=subprocess.PIPE)
    try:
        wait_for_child(marker.exists, process)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)


def schema_file(path: Path, version: int) -> sqlite3.Connection:
    """A new SQLite session file as loopwright's schema `version` made it (its first `version`
    migrations, its `user_version`), open for the caller to add rows in that version's form."""
    from loopwright.store.schema import MIGRATIONS

    db = sqlite3.connect(path)
    for step in MIGRATIONS[:version]:
        if callable(step):
            step(db)
        else:
            db.executescript(step)
    db.execute(f"PRAGMA user_version = {version}")
    return db


def search_hits(store: Any, text: str) -> list[tuple[str, int]]:
    """(session, seq) of each message a session store's `search` finds for `text`, sorted: what
    a migrated file's search index must still find."""
    return sorted((hit.session_id, hit.seq) for hit in store.search(text))


@contextlib.contextmanager
def cyclic_garbage(kind: type) -> Iterator[list[Any]]:
    """The objects of `kind` made in the block that only the garbage collector can free (held
    in a reference cycle), listed once the block is over: the collector is off inside it, and
    what it then collects is kept for the list instead of freed."""
    gc.collect()
    gc.disable()
    found: list[Any] = []
    try:
        yield found
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
    finally:
        gc.set_debug(0)
        gc.enable()
    found.extend(o for o in gc.garbage if isinstance(o, kind))
    gc.garbage.clear()


def run_in_processes(target: Callable[..., None], argsets: list[tuple[Any, ...]], *,
                     timeout: float) -> None:
    """`target(*args)` for each of `argsets`, each in a spawned process, all at once; fails
    unless every one exits cleanly within `timeout` seconds."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=args) for args in argsets]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout)
        assert worker.exitcode == 0


class OpenedConnections:
    """The TCP connections the running event loop opens (its `create_connection`, which httpx's
    asyncio backend uses): `count`, and their transports for the sockets behind them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        loop = asyncio.get_running_loop()
        connect = loop.create_connection
        self.transports: list[asyncio.BaseTransport] = []

        async def recording_connect(*args: Any, **kwargs: Any) -> Any:
            made = await connect(*args, **kwargs)
            self.transports.append(made[0])
            return made

        monkeypatch.setattr(loop, "create_connection", recording_connect)

    @property
    def count(self) -> int:
        return len(self.transports)

    def to_port(self, port: int) -> list[asyncio.BaseTransport]:
        """Those connected to `port` on 127.0.0.1."""
        return [t for t in self.transports if t.get_extra_info("peername")[1] == port]

    def open_to(self, port: int) -> list[asyncio.BaseTransport]:
        """Those connected to `port` on 127.0.0.1 and not closed."""
        return [t for t in self.to_port(port) if not t.is_closing()]


def ctrl_c_on_a_terminal(command: list[str], cwd: Path) -> tuple[str, int, str]:
    """A protocol server (`acp`, `mcp-server`) started as a user starts it by hand, its stdin a
    terminal: (its first line on stderr, its exit status after a SIGINT once it reads stdin,
    the rest of its stderr). A pseudo-terminal, not tmux: a tmux pane runs the command under a
    shell that Ctrl-C may end too, taking the screen with it."""
    import pty
    import signal

    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(command, cwd=cwd, env=cli_env(cwd), stdin=terminal,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None and process.stdout is not None
        with process.stdout, process.stderr:
            first = process.stderr.readline()  # once it reads stdin
            time.sleep(0.5)  # into the read
            process.send_signal(signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise AssertionError(f"{command} ignored Ctrl-C") from None
            return first, process.returncode, process.stderr.read()
    finally:
        os.close(controller)
        os.close(terminal)


def closed_by_the_server(connections: list[socket.socket]) -> list[socket.socket]:
    """Those of `connections` the server has closed (or is closing): readable at all, as a
    server that never got a request's head has nothing else to send."""
    watch = select.poll()
    for connection in connections:
        watch.register(connection, select.POLLIN)
    ready = {fd for fd, _ in watch.poll(0)}
    return [connection for connection in connections if connection.fileno() in ready]
