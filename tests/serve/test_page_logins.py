"""The page's login ends on the server when a tab logs out (serve/logins.py), in Debian's
Chromium (Playwright) against real servers: a tab opened while another logs out is not logged
in by a tab that answers late, a tab the browser restores with its sessionStorage works until
the logout and is logged out after it, and the server refuses the old login token and ends the
event streams opened with it."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from serve_helpers import (
    LOGGED_OUT,
    NO_TOKEN,
    TOKEN,
    Served,
    agent_options,
    logged_in,
    new_tab,
    serve_in_thread,
    shown_error,
    stored_token,
)

from loopwright.serve.app import ServeOptions
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import http_server

ENDED = "This tab's login has ended"
HANG_GUARD = 60.0


class Holds:
    """A server whose `GET /NAME` is answered only once `release(NAME)` is called: a tab that
    asks it with a synchronous XMLHttpRequest runs nothing else until then, as a tab the
    browser keeps busy or throttled in the background answers its messages late."""

    def __init__(self) -> None:
        self.arrived: dict[str, threading.Event] = {}
        self.released: dict[str, threading.Event] = {}
        holds = self

        class Held(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.strip("/")
                holds.arrived[name].set()
                holds.released[name].wait(HANG_GUARD)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.handler = Held

    def hold(self, tab: Any, root: str, name: str, then: str = "") -> None:
        """Keep `tab` busy from now until `release(name)`, and run `then` (JavaScript) in it
        in the same task."""
        self.arrived[name], self.released[name] = threading.Event(), threading.Event()
        tab.evaluate("""([url, then]) => setTimeout(() => {
            const request = new XMLHttpRequest();
            request.open("GET", url, false);
            try { request.send(); } catch { /* no CORS header: answered, which is all */ }
            if (then) new Function(then)();
        }, 0)""", [f"{root}/{name}", then])
        assert self.arrived[name].wait(HANG_GUARD)

    def release(self, name: str) -> None:
        self.released[name].set()


@contextlib.contextmanager
def holding() -> Iterator[tuple[Holds, str]]:
    holds = Holds()
    try:
        with http_server(holds.handler) as root:
            yield holds, root
    finally:
        for released in holds.released.values():
            released.set()


class Held:
    """ASGI: the server's app, with the request for `path` held until `release` is set — before
    the app sees it, or with `after_head`, between its answer's head and body."""

    def __init__(self, app: Any, path: str, *, after_head: bool = False) -> None:
        self.app, self.path, self.after_head = app, path, after_head
        self.arrived, self.release = threading.Event(), threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.body":
                await self._hold()
            await send(message)

        if not self.after_head:
            await self._hold()
        await self.app(scope, receive, sending if self.after_head else send)

    async def _hold(self) -> None:
        self.arrived.set()
        await anyio.to_thread.run_sync(self.release.wait, HANG_GUARD)


@contextlib.contextmanager
def serving_held(tmp_path: Path, path: str, *, after_head: bool = False
                 ) -> Iterator[tuple[Served, Held]]:
    """A server with one finished session, and the requests for `path` held."""
    held: list[Held] = []

    def holding(app: Any) -> Held:
        held.append(Held(app, path, after_head=after_head))
        return held[0]

    with FakeModelServer([Reply("an answer")]) as fake, serve_in_thread(ServeOptions(
            token=TOKEN, store=open_store(tmp_path / "sessions.db"),
            agent_options=agent_options(fake, tmp_path / "work")), wrap=holding) as served:
        served.wait_finished(served.start("a task")["run_id"])
        try:
            yield served, held[0]
        finally:
            held[0].release.set()


def status_with(served: Served, token: str | None) -> int:
    assert token is not None
    return httpx.get(f"{served.url}/health", headers={"authorization": f"Bearer {token}"},
                     timeout=10).status_code


def test_a_tab_opened_while_another_logs_out_is_not_logged_in_by_a_late_answer(
        browser: Any, one_session: tuple[Served, str]) -> None:
    # The new tab asked for the token; the tab logging out was busy and logged out before it
    # read the question; a background tab read the question before the logout and handed the
    # token over after it. The new tab had ignored the logout (it held no token yet) and was
    # logged in after every tab had logged out, and the server took the token for ever.
    served, _ = one_session
    with logged_in(browser, served) as (context, first), holding() as (holds, root):
        background = new_tab(context, f"{served.url}/")
        background.wait_for_selector("#sessions li.session")
        login = stored_token(first)
        holds.hold(background, root, "background")
        holds.hold(first, root, "first", then="document.getElementById('logout').click()")
        asking = new_tab(context, f"{served.url}/")  # its question is out, nobody answered yet
        holds.release("first")  # logs out, then reads the question (and has no token)
        assert shown_error(first).startswith(LOGGED_OUT)
        holds.release("background")  # reads the question, then the logout
        assert shown_error(background).startswith(LOGGED_OUT)
        asking.wait_for_selector("#error:not([hidden]), #sessions li.session")
        assert stored_token(asking) is None
        assert (asking.text_content("#error") or "").startswith(LOGGED_OUT)
        assert asking.query_selector_all("#sessions li") == []
    assert status_with(served, login) == 401  # the login ended on the server
    assert status_with(served, TOKEN) == 200  # the server's own token is no page's to end


def test_a_restored_tab_works_until_the_logout_and_is_logged_out_after_it(
        browser: Any, one_session: tuple[Served, str]) -> None:
    # A tab the browser restores (or duplicates) gets its sessionStorage back, token included:
    # the token was the server's own, which logging out did not end, so a tab restored after
    # the logout was logged in again. Simulated: the tab's sessionStorage put into a new
    # context, which shares no BroadcastChannel with the first (as after a restart).
    served, _ = one_session
    with logged_in(browser, served) as (_, first):
        login = stored_token(first)
        assert login is not None and login != TOKEN  # the server's token is not kept
        before, after = (browser.new_context(bypass_csp=True) for _ in range(2))
        try:
            for restored in (before, after):
                restored.add_init_script(
                    f"sessionStorage.setItem('loopwright-token', {login!r})")
            early = new_tab(before, f"{served.url}/")
            early.wait_for_selector("#sessions li.session")  # before the logout: it works
            first.click("#logout")
            assert shown_error(first).startswith(LOGGED_OUT)
            late = new_tab(after, f"{served.url}/")
            assert shown_error(late).startswith(ENDED)
            assert late.query_selector_all("#sessions li") == []
            assert late.evaluate("() => sessionStorage.getItem('loopwright-token')") is None
            # the tab restored before the logout heard nothing of it: the server ends its event
            # stream, the stream's next request is refused, and it logs itself out
            assert shown_error(early).startswith(ENDED)
            assert stored_token(early) is None
            assert early.is_hidden("#logout")
        finally:
            before.close()
            after.close()
    assert status_with(served, login) == 401


def test_logging_out_ends_every_login_of_the_browsers_tabs(
        browser: Any, one_session: tuple[Served, str]) -> None:
    # a tab that opened the printed link again holds a login of its own: logging out in
    # another tab must end that one on the server too, not only the login it held itself
    served, _ = one_session
    with logged_in(browser, served) as (context, first):
        again = new_tab(context, f"{served.url}/#token={served.token}")
        again.wait_for_selector("#sessions li.session")
        logins = [stored_token(first), stored_token(again)]
        assert None not in logins and logins[0] != logins[1]
        with again.expect_response(f"{served.url}/logout") as ended:
            first.click("#logout")
        assert ended.value.status == 200  # the second tab ended its own login
        for tab in (first, again):
            assert shown_error(tab).startswith(LOGGED_OUT)
    assert [status_with(served, login) for login in logins] == [401, 401]


def test_while_the_server_ends_the_login_no_tab_hands_the_token_over(
        browser: Any, tmp_path: Path) -> None:
    """Held: the tabs forget the token before the server is told, so a tab opened while the
    logout request is on its way is handed nothing."""
    with serving_held(tmp_path, "/logout") as (served, held):
        with logged_in(browser, served) as (context, first):
            login = stored_token(first)
            second = new_tab(context, f"{served.url}/")
            second.wait_for_selector("#sessions li.session")
            with first.expect_response(f"{served.url}/logout") as ended:
                first.click("#logout")
                assert held.arrived.wait(HANG_GUARD)
                opened = new_tab(context, f"{served.url}/")
                assert shown_error(opened).startswith(NO_TOKEN)
                assert stored_token(opened) is None
                assert shown_error(second).startswith(LOGGED_OUT)
                held.release.set()
            assert ended.value.status == 200
        assert status_with(served, login) == 401


def test_a_tab_that_leaves_before_its_login_is_answered_keeps_no_token(
        browser: Any, tmp_path: Path) -> None:
    # the printed link opened, and another address typed before POST /login's answer had
    # all come: the cut-short body read as no token, the tab kept the string "undefined", and
    # the next page sent "Authorization: Bearer undefined"
    with serving_held(tmp_path, "/login", after_head=True) as (served, held):
        context = browser.new_context(bypass_csp=True)
        try:
            tab = new_tab(context, f"{served.url}/#token={served.token}")
            assert held.arrived.wait(HANG_GUARD)
            tab.goto(f"{served.url}/")
            held.release.set()
            assert shown_error(tab).startswith(NO_TOKEN)
            assert stored_token(tab) is None
        finally:
            context.close()


def restored_with(browser: Any, served: Served, token: str) -> tuple[Any, Any]:
    """A tab the browser restored with `token` in its sessionStorage (a new context: no open
    tab of the first to ask), its session list shown; and its context, to close."""
    context = browser.new_context(bypass_csp=True)
    context.add_init_script(f"sessionStorage.setItem('loopwright-token', {token!r})")
    tab = new_tab(context, f"{served.url}/")
    tab.wait_for_selector("#sessions li.session")
    return context, tab


def test_a_tab_restored_with_the_servers_own_token_trades_it_for_a_login(
        browser: Any, one_session: tuple[Served, str]) -> None:
    # A tab restored from before page logins kept the server's own token: it went on using
    # it, and its Log out was refused (400: no logout ends the server's token), so the page
    # said the server could not be told and the tab's token still worked after the logout.
    served, _ = one_session
    context, tab = restored_with(browser, served, TOKEN)
    try:
        login = stored_token(tab)
        assert login is not None and login != TOKEN  # traded at load, the server's forgotten
        assert TOKEN not in tab.evaluate("() => Object.values(sessionStorage)")
        with tab.expect_response(f"{served.url}/logout") as ended:
            tab.click("#logout")
        assert ended.value.status == 200  # the login ended: nothing for the page to warn of
        assert shown_error(tab).startswith(LOGGED_OUT)
    finally:
        context.close()
    assert status_with(served, login) == 401
    assert status_with(served, TOKEN) == 200


def test_a_tab_restored_with_a_page_login_keeps_it_as_it_is(
        browser: Any, one_session: tuple[Served, str]) -> None:
    served, _ = one_session
    with logged_in(browser, served) as (_, first):
        login = stored_token(first)
        assert login is not None
        context, tab = restored_with(browser, served, login)
        try:
            assert stored_token(tab) == login  # no new login made for it
            asked: list[str] = []
            tab.on("request", lambda request: asked.append(request.url))
            tab.reload()  # its token now known for a login: the server is not asked again
            tab.wait_for_selector("#sessions li.session")
            assert stored_token(tab) == login
            assert f"{served.url}/login" not in asked
            with tab.expect_response(f"{served.url}/logout") as ended:
                tab.click("#logout")
            assert ended.value.status == 200
            assert shown_error(tab).startswith(LOGGED_OUT)
        finally:
            context.close()
    assert status_with(served, login) == 401
