"""The page's login across tabs, in Debian's Chromium (Playwright) against real servers: a tab
opened from a logged-in one, by a middle-click or by typing the address, is logged in; a page of
another port learns nothing; the token is gone once the last tab closes; logging out logs out
every tab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from serve_helpers import (
    LOGGED_OUT,
    NO_TOKEN,
    TOKEN,
    WAIT_MS,
    Served,
    agent_options,
    logged_in,
    new_tab,
    other_origin_page,
    serve_in_thread,
    shown_error,
    stored_token,
)

from loopwright.serve.app import ServeOptions
from loopwright.testing import FakeModelServer

OTHER_TOKEN = "other-token-9876543210fedcba"


@pytest.mark.parametrize("click", [{"button": "middle"}, {"modifiers": ["Control"]}],
                         ids=["middle-click", "ctrl-click"])
def test_a_session_opened_in_a_new_tab_is_logged_in_and_shown(
        browser: Any, one_session: tuple[Served, str], click: dict[str, Any]) -> None:
    # The token lived in the tab's sessionStorage alone: a session middle-clicked in the list
    # (it was no link at all) or a copy of the page in a new tab asked for the link again
    served, session = one_session
    with logged_in(browser, served) as (context, page):
        with context.expect_page() as opened:
            page.click("#sessions li.session a", **click)
        tab = opened.value
        tab.set_default_timeout(WAIT_MS)
        tab.wait_for_selector(".turn .text >> text=the first answer")
        title = tab.text_content("#session-title") or ""
        assert stored_token(tab) == stored_token(page) != TOKEN  # the page's login, handed over
        assert tab.url == f"{served.url}/"  # nothing of the link left in the address bar
        assert page.is_visible("#sessions li.session")  # the first tab is as it was
    assert title.startswith(f"Session {session[:8]}")


def test_a_tab_opened_by_its_address_is_logged_in_but_one_of_another_port_gets_nothing(
        browser: Any, one_session: tuple[Served, str], tmp_path: Path) -> None:
    served, _ = one_session
    with FakeModelServer([]) as fake, serve_in_thread(ServeOptions(
            token=OTHER_TOKEN, agent_options=agent_options(fake, tmp_path / "two"))) as other, \
            logged_in(browser, served) as (context, _), \
            other_origin_page(b"<!doctype html><title>elsewhere</title>") as elsewhere:
        pasted = new_tab(context, f"{served.url}/")
        pasted.wait_for_selector("#sessions li.session")
        assert stored_token(pasted) not in (None, TOKEN)
        # must not fire: another loopwright serve on another port of the same host...
        neighbour = new_tab(context, f"{other.url}/")
        assert shown_error(neighbour).startswith(NO_TOKEN)
        assert stored_token(neighbour) is None
        # ...nor any page of another port asking on the same channel
        probe = new_tab(context, elsewhere)
        heard = probe.evaluate("""() => new Promise((resolve) => {
            const heard = [];
            const channel = new BroadcastChannel("loopwright-login");
            channel.onmessage = ({ data }) => heard.push(data);
            channel.postMessage({ type: "ask" });
            setTimeout(() => resolve(heard), 1500);
        })""")
        kept = [new_tab(context, f"{origin}/").evaluate("() => localStorage.length")
                for origin in (served.url, other.url)]
        cookies = context.cookies()
    assert heard == []
    assert kept == [0, 0] and cookies == []  # nothing outlives the tabs


def test_once_the_last_tab_is_closed_a_new_tab_needs_the_link(
        browser: Any, one_session: tuple[Served, str]) -> None:
    served, _ = one_session
    with logged_in(browser, served) as (context, page):
        page.close()
        fresh = new_tab(context, f"{served.url}/")
        assert shown_error(fresh).startswith(NO_TOKEN)
        assert stored_token(fresh) is None


def test_logging_out_in_one_tab_logs_out_every_tab(
        browser: Any, one_session: tuple[Served, str]) -> None:
    served, _ = one_session
    with logged_in(browser, served) as (context, first):
        second = new_tab(context, f"{served.url}/")
        second.wait_for_selector("#sessions li.session")
        first.click("#logout")
        for tab in (first, second):
            assert shown_error(tab).startswith(LOGGED_OUT)
            assert stored_token(tab) is None
            assert tab.query_selector_all("#sessions li") == []
            assert tab.is_hidden("#logout")
        later = new_tab(context, f"{served.url}/")
        assert shown_error(later).startswith(NO_TOKEN)
        assert stored_token(later) is None
        # the printed link still logs in again, in any tab
        second.goto(f"{served.url}/#token={served.token}")
        second.wait_for_selector("#sessions li.session")
