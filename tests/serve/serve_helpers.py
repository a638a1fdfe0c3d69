"""Helpers for the serve tests: a real `loopwright serve` app on 127.0.0.1 (uvicorn on a thread of
its own) in front of a FakeModelServer, and small clients for its JSON API and event streams.
(Imported as `serve_helpers`: `from conftest import` breaks when pytest swaps conftest modules.)"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from loopwright.builtin import default_tools
from loopwright.serve.app import ServeOptions, create_app
from loopwright.serve.limits import ConnectionLimits
from loopwright.testing import FakeModelServer
from shared_helpers import http_server

TOKEN = "test-token-0123456789abcdef"
WAIT_MS = 20_000  # how long a page test waits for the page (a loaded machine is slow)
NO_TOKEN = "Open the link `loopwright serve` printed"
LOGGED_OUT = "Logged out in every tab"


@dataclass
class Served:
    """A running server: its URL and token, and a JSON client with the token set."""

    url: str
    token: str
    app: Any
    clients: list[httpx.Client] = field(default_factory=list)
    pid: int | None = None  # the server's process, when it runs in one of its own
    link: str | None = None  # the page's link as `loopwright serve` printed it

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"authorization": f"Bearer {token or self.token}", **kwargs.pop("headers", {})}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)
        self.clients.append(client)
        return client

    @property
    def api(self) -> httpx.Client:
        if not self.clients:
            self.client()
        return self.clients[0]

    def start(self, prompt: str = "hi", **body: Any) -> dict[str, Any]:
        response = self.api.post("/runs", json={"prompt": prompt, **body})
        assert response.status_code == 201, response.text
        started: dict[str, Any] = response.json()
        return started

    def events(self, run_id: str, *, after: int | None = None, last_event_id: int | None = None,
               stop: Callable[[dict[str, Any]], bool] | None = None
               ) -> list[tuple[int, dict[str, Any]]]:
        """Read the run's SSE stream until it ends (or `stop(event)` says so): (id, event)."""
        headers = {"last-event-id": str(last_event_id)} if last_event_id is not None else {}
        params = {"after": str(after)} if after is not None else {}
        found: list[tuple[int, dict[str, Any]]] = []
        with self.api.stream("GET", f"/runs/{run_id}/events", headers=headers,
                             params=params) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            for event_id, data in sse_messages(response.iter_lines()):
                found.append((event_id, data))
                if stop is not None and stop(data):
                    break
        return found

    def wait_finished(self, run_id: str, limit: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            run: dict[str, Any] = self.api.get(f"/runs/{run_id}").json()
            if run["finished"]:
                return run
            time.sleep(0.02)
        pytest.fail(f"run {run_id} did not finish within {limit}s")


def sse_messages(lines: Iterator[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(id, parsed data) per SSE message; comments and `retry:` skipped."""
    event_id, data = 0, []
    for line in lines:
        if line == "":
            if data:
                yield event_id, json.loads("\n".join(data))
            data = []
        elif line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            data.append(line[6:])


@contextlib.contextmanager
def serve_in_thread(options: ServeOptions, limits: ConnectionLimits | None = None, *,
                    wrap: Callable[[Any], Any] | None = None) -> Iterator[Served]:
    """uvicorn on 127.0.0.1, any free port, in a thread with its own event loop; `wrap` puts an
    ASGI app of the test's in front of the server's (one that holds a request, say)."""
    app = create_app(options)
    served_app = wrap(app) if wrap is not None else app
    limited = (limits or ConnectionLimits.fitting()).uvicorn_config()
    server = uvicorn.Server(uvicorn.Config(served_app, host="127.0.0.1", port=0,
                                           log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=2, **limited))
    thread = threading.Thread(target=server.run, name="loopwright-serve-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    served = Served(url=f"http://127.0.0.1:{port}", token=options.token, app=app)
    try:
        yield served
    finally:
        for client in served.clients:
            client.close()
        server.should_exit = True
        thread.join(20)


def agent_options(fake: FakeModelServer, workdir: Path, **extra: Any) -> dict[str, Any]:
    """What `loopwright serve` flags would give, pointed at the fake model server."""
    workdir.mkdir(parents=True, exist_ok=True)
    return {"model": "gpt-4o-mini", "base_url": fake.base_url, "api_key": "test",
            "workdir": str(workdir), "tools": default_tools(), **extra}


MakeServer = Callable[..., Served]


@contextlib.contextmanager
def serve_process(*args: str, env: dict[str, str] | None = None,
                  max_open_files: int | None = None) -> Iterator[Served]:
    """`loopwright serve --port 0 ARGS` as a real process; stopped with Ctrl-C afterwards."""
    import os
    import re
    import signal
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "loopwright", "serve", "--port", "0", *args],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "LOOPWRIGHT_SERVE_TOKEN": TOKEN, **(env or {})},
        preexec_fn=None if max_open_files is None else lambda: _limit_files(max_open_files))
    token = (env or {}).get("LOOPWRIGHT_SERVE_TOKEN", TOKEN)
    assert process.stderr is not None
    served: Served | None = None
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while served is None and time.monotonic() < deadline and process.poll() is None:
            lines.append(process.stderr.readline())
            found = re.search(r"serving on ((http://127\.0\.0\.1:\d+)/\S*)", lines[-1])
            if found:
                served = Served(url=found.group(2), token=token, app=None, pid=process.pid,
                                link=found.group(1))
        if served is None:
            raise RuntimeError("loopwright serve did not start: " + "".join(lines))
        yield served
    finally:
        if served is not None:
            for client in served.clients:
                client.close()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()


def _limit_files(most: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))


@contextlib.contextmanager
def other_origin_page(body: bytes) -> Iterator[str]:
    """A page with `body` on another port of 127.0.0.1: another origin, but the same site (a
    cookie of the host would go along with its requests)."""
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Page) as root:
        yield f"{root}/"


@contextlib.contextmanager
def logged_in_page(browser: Any, served: Served, *, bypass_csp: bool = True) -> Iterator[Any]:
    """A page of a new browser context, logged in by the printed link, its session list shown;
    the context closed afterwards."""
    context = browser.new_context(bypass_csp=bypass_csp)
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{served.url}/#token={served.token}")
        page.wait_for_selector("#sessions li", state="attached")
        yield page
    finally:
        context.close()


@contextlib.contextmanager
def logged_in(browser: Any, served: Served) -> Iterator[tuple[Any, Any]]:
    """A new browser context and its first tab, logged in by the printed link, a stored
    session listed; the context closed afterwards."""
    context = browser.new_context(bypass_csp=True)
    try:
        page = new_tab(context, f"{served.url}/#token={served.token}")
        page.wait_for_selector("#sessions li.session")
        yield context, page
    finally:
        context.close()


def new_tab(context: Any, url: str | None = None) -> Any:
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    if url is not None:
        page.goto(url)
    return page


def stored_token(page: Any) -> str | None:
    """The login token the tab keeps (its sessionStorage)."""
    return page.evaluate("() => sessionStorage.getItem('loopwright-token')")


def shown_error(page: Any) -> str:
    page.wait_for_selector("#error:not([hidden])")
    return page.text_content("#error") or ""
