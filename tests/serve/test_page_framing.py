"""Issue 29, item 8: the page cannot be framed by another origin (its approval buttons could be
clickjacked), and it runs no inline script. Real server, real Chromium through Playwright."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from serve_helpers import TOKEN, MakeServer, Served, other_origin_page

from loopwright.serve.app import PAGE_POLICY
from loopwright.testing import FakeModelServer, Reply


def _framing_page(target: str) -> contextlib.AbstractContextManager[str]:
    """A page of another origin (same site: the login cookie goes along) that puts `target` in
    an iframe."""
    return other_origin_page(
        (f"<!doctype html><title>elsewhere</title><iframe id='victim' src='{target}' "
         "width='800' height='600'></iframe>").encode())


@pytest.fixture
def logged_in(browser: Any) -> Iterator[Callable[[Served], Any]]:
    """A page logged in to the server, in a context that enforces the page's CSP."""
    contexts: list[Any] = []

    def open_(served: Served) -> Any:
        context = browser.new_context()
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{served.url}/#token={TOKEN}")
        page.wait_for_selector("#sessions li", state="attached")
        return page

    yield open_
    for context in contexts:
        context.close()


def _framed_page_loaded(page: Any) -> bool:
    """Whether the iframe holds the real page (its start button), not the browser's refusal."""
    page.wait_for_load_state("load")
    [frame] = [f for f in page.frames if f is not page.main_frame]
    try:
        return bool(frame.evaluate("() => document.querySelector('#start') !== null"))
    except Exception:  # an error document the browser substituted
        return False


def test_every_response_forbids_framing_and_inline_script(make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        for path in ("/", "/static/app.js", "/docs", "/sessions"):
            response = served.api.get(path)
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"], path
            assert "'unsafe-inline'" not in response.headers["content-security-policy"]
            assert response.headers["x-frame-options"] == "DENY", path
        assert "script-src 'self'" in PAGE_POLICY


def test_a_page_of_another_origin_cannot_frame_the_page(
        make_server: MakeServer, logged_in: Callable[[Served], Any]) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        page = logged_in(served)  # logged in: the cookie would let a frame load the page
        assert page.query_selector("#start") is not None  # top level, it works
        with _framing_page(f"{served.url}/") as elsewhere:
            page.goto(elsewhere)
            assert not _framed_page_loaded(page)


def test_the_page_runs_under_its_policy_without_violations(
        make_server: MakeServer, logged_in: Callable[[Served], Any]) -> None:
    answer = ("# Result\n\nSome *Markdown* with `code`:\n\n```python\ndef f():\n    return 1\n"
              "```\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    with FakeModelServer([Reply(answer, chunk_size=20)]) as fake:
        served = make_server(fake)
        page = logged_in(served)
        page.add_init_script("""window.violations = [];
            document.addEventListener('securitypolicyviolation',
              (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));""")
        page.reload()
        page.wait_for_selector("#sessions li", state="attached")
        page.fill("#prompt", "show me")  # a run: streamed Markdown, highlighted code, a chart
        page.click("#start")
        page.wait_for_selector(".run-state.completed")
        assert page.query_selector("pre code") is not None  # the Markdown was rendered
        assert page.evaluate("() => window.violations") == []
        assert page.evaluate("() => document.querySelectorAll('script:not([src])').length") == 0


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_the_page_and_the_api_page_load_without_a_console_error(
        make_server: MakeServer, browser: Any, path: str) -> None:
    """A browser asks for an icon on its own: without one the console of every fresh page showed
    the 404 of `/favicon.ico`."""
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        context = browser.new_context()
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text)
                    if message.type == "error" else None)
            page.goto(f"{served.url}/#token={TOKEN}")  # the printed link
            page.goto(f"{served.url}{path}")
            page.wait_for_load_state("load")  # never idle: the page follows /runs/news
            page.wait_for_timeout(500)  # the icon is asked for after the load
            icon = page.evaluate("() => document.querySelector('link[rel=icon]')?.href")
        finally:
            context.close()
    assert errors == []
    assert icon == f"{served.url}/static/icon.svg"
