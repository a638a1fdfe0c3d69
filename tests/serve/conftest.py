"""The `make_server` fixture: a running `loopwright serve` app per test (see serve_helpers); the
page tests' browser (Debian's Chromium driven by Playwright, one per test module) and
`open_page`, a fresh browser context on a served page; `one_session`, a server with one
finished session."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import TOKEN, WAIT_MS, MakeServer, Served, agent_options, serve_in_thread

from loopwright.serve.app import ServeOptions
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import require_component


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[MakeServer]:
    """`make_server(fake, approval_timeout=…, leave_grace=…, store=…)` → a running server."""
    stack = contextlib.ExitStack()

    def make(fake: FakeModelServer, *, store: Any = "default", workdir: Path | None = None,
             agent: dict[str, Any] | None = None, **options: Any) -> Served:
        chosen = open_store(tmp_path / "sessions.db") if store == "default" else store
        serve_options = ServeOptions(
            token=TOKEN, store=chosen,
            agent_options=agent_options(fake, workdir or tmp_path / "work", **(agent or {})),
            **{"leave_grace": 0.5, **options})
        return stack.enter_context(serve_in_thread(serve_options))

    with stack:
        yield make


@pytest.fixture
def one_session(make_server: MakeServer) -> Iterator[tuple[Served, str]]:
    """A server with one finished session: the server and the session's id."""
    with FakeModelServer([Reply("the first answer")]) as fake:
        served = make_server(fake)
        started = served.start("first task")
        served.wait_finished(started["run_id"])
        yield served, started["session_id"]


CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    require_component(sync_playwright is not None and shutil.which(CHROMIUM) is not None,
                      "the page tests need Chromium and Playwright: apt-get install -y chromium; "
                      "pip install -e '.[dev]' (no browser download: Debian's is used)")
    assert sync_playwright is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    contexts: list[Any] = []

    def open_(served: Served, width: int = 1280, height: int = 800, *,
              bypass_csp: bool = True) -> Any:
        # Playwright's wait_for_function polls with eval, which the page's CSP forbids (as it
        # should): most tests drive the page around it; the CSP tests keep it (bypass_csp=False)
        context = browser.new_context(viewport={"width": width, "height": height},
                                      bypass_csp=bypass_csp)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{served.url}/#token={TOKEN}")  # the printed link
        page.wait_for_selector("#sessions li", state="attached")  # folded away when narrow
        return page

    yield open_
    for context in contexts:
        context.close()
