"""The page's login against what else runs in the browser and on the machine, in Debian's
Chromium (Playwright) against real servers: another `loopwright serve` on the same host, other
servers of the host that see what the browser sends them, cookies they set, and tokens with
characters a URL treats specially."""

from __future__ import annotations

import contextlib
import http.server
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from serve_helpers import (
    TOKEN,
    MakeServer,
    agent_options,
    logged_in_page,
    other_origin_page,
    serve_in_thread,
    serve_process,
    stored_token,
)

from loopwright.serve.app import ServeOptions
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import http_server

OTHER_TOKEN = "other-token-9876543210fedcba"


def test_two_servers_on_one_host_keep_their_logins_apart(browser: Any, tmp_path: Path) -> None:
    # A browser sends a host's cookies to every port of it: the second server's login replaced
    # the first one's cookie, and the first page, reloaded, was refused (401)
    with FakeModelServer([]) as fake:
        options = [ServeOptions(token=token, agent_options=agent_options(fake, tmp_path / name))
                   for token, name in ((TOKEN, "one"), (OTHER_TOKEN, "two"))]
        with serve_in_thread(options[0]) as first, serve_in_thread(options[1]) as second:
            context = browser.new_context(bypass_csp=True)
            try:
                page = context.new_page()
                page.set_default_timeout(20_000)
                for served in (first, second, first, second):
                    page.goto(f"{served.url}/#token={served.token}")
                    page.wait_for_selector("#sessions li", state="attached")
                for served in (first, second):  # each origin keeps its own login
                    response = page.goto(f"{served.url}/")
                    assert response is not None and response.status == 200, served.url
                    page.wait_for_selector("#sessions li", state="attached")
                    login = stored_token(page)
                    assert login is not None and login != served.token
                    assert served.client(token=login).get("/health").status_code == 200
            finally:
                context.close()


@pytest.mark.parametrize("token", [
    "q3ZV+lTz/0aJx8c+0m1nHbWzP2d4sKqS7xYvLr9Eo1U=",  # `openssl rand -base64 32`
    'semi;colon,comma"quote\\back',  # printable ASCII without spaces: a token serve accepts
    "amp&hash#pct%41plus+0123456789",  # "&" ended the link's token, "#" and "%41" changed it
])
def test_the_printed_link_logs_in_with_any_token_serve_accepts(browser: Any, tmp_path: Path,
                                                               token: str) -> None:
    # The link's "+" was read as a space (the query's form encoding) and refused; a ";" cut the
    # cookie's value short; the link printed the token as it is, so "&" or "#" cut it short and
    # "%41" became "A", and the page that followed the link was refused
    with FakeModelServer([]) as fake, serve_process(
            "--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
            "--workdir", str(tmp_path), env={"LOOPWRIGHT_SERVE_TOKEN": token}) as served:
        assert served.link is not None and served.link.startswith(f"{served.url}/#token=")
        assert "&" not in served.link and served.link.count("#") == 1
        near_misses = {token.replace("+", " "), token[:-1], token + "x"} - {token}
        context = browser.new_context(bypass_csp=True)
        try:
            page = context.new_page()
            page.set_default_timeout(20_000)
            response = page.goto(served.link)
            assert response is not None and response.status == 200, served.link
            page.wait_for_selector("#sessions li", state="attached")
            assert stored_token(page) not in (None, token)  # traded for the page's login
            assert page.url == f"{served.url}/"  # out of the address bar
        finally:
            context.close()
        for wrong in near_misses:  # a near miss still logs nobody in (a browser without a login)
            stranger = browser.new_context(bypass_csp=True)
            try:
                page = stranger.new_page()
                page.goto(f"{served.url}/#token={quote(wrong, safe='')}")
                page.wait_for_selector("#error >> text=missing or wrong token")
                assert page.query_selector("#sessions li") is None
            finally:
                stranger.close()


def test_cookies_other_servers_on_the_host_set_do_not_lock_the_page_out(
        make_server: MakeServer, browser: Any) -> None:
    # A browser sends every cookie of 127.0.0.1 here, whichever port set it; `http.cookies`
    # gave up on the whole header at one it found malformed, and the page was refused (401)
    setter = (b"<!doctype html><title>a dev server</title><script>"
              b"document.cookie = 'prefs={\"theme\":\"dark\"}; path=/';"
              b"document.cookie = 'beta; path=/';</script>")
    with FakeModelServer([]) as fake, other_origin_page(setter) as elsewhere:
        served = make_server(fake)
        context = browser.new_context(bypass_csp=True)
        try:
            page = context.new_page()
            page.set_default_timeout(20_000)
            page.goto(elsewhere)  # the other server's page, visited before this one
            assert {c["name"] for c in context.cookies()} == {"prefs", ""}
            page.goto(f"{served.url}/#token={served.token}")
            page.wait_for_selector("#sessions li", state="attached")
            response = page.goto(f"{served.url}/")
            assert response is not None and response.status == 200
            page.wait_for_selector("#sessions li", state="attached")
        finally:
            context.close()


def _hostile(n: int) -> str:
    return (f'<img src=x onerror="window.pwned={n}"><svg onload="window.pwned={n}"></svg>'
            f'<a href="javascript:window.pwned={n}">go</a>')


INJECTED = """() => [...document.querySelectorAll(
    'img, svg:not(.chart svg), a[href^="javascript"], [onerror], [onload]')]
    .filter((node) => !node.closest('.chart')).map((node) => node.outerHTML)"""


def test_model_tool_and_user_text_shows_as_text_everywhere_on_the_page(
        make_server: MakeServer, browser: Any, tmp_path: Path) -> None:
    """Held: what the prompt (the session's title), a tool's name, its arguments, an approval's
    command and a model name another client chose hold is put into the page as text, live and
    reopened — checked without the CSP (bypassed), so it is the page that holds, not the
    policy."""
    script = [Reply("ok"), Reply(tool_calls=[call(_hostile(2), {"x": _hostile(3)}, id="c1"),
                                call("bash", {"command": f"rm -rf '{_hostile(4)}'"}, id="c2")]),
              Reply("all done")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=tmp_path / "work")
        served.wait_finished(served.start("elsewhere", model=_hostile(5))["run_id"])
        with logged_in_page(browser, served) as page:
            page.wait_for_selector("#sessions li.session", state="attached")
            page.fill("#prompt", _hostile(1))
            page.click("#start")
            page.click(".approval button[data-decision=allow]")
            page.wait_for_selector(".run-state.completed")
            mine = page.get_attribute("#sessions li.session.open", "data-id")
            live = page.evaluate(INJECTED)
            names = [n.text_content() for n in page.query_selector_all(".tool .name")]
            page.reload()
            page.click(f"#sessions li.session[data-id='{mine}']")
            page.wait_for_selector(".tool .result")
            reopened = page.evaluate(INJECTED)
            shown = page.text_content("#layout")
            pwned = page.evaluate("() => window.pwned")
    assert live == [] and reopened == [], (live, reopened)
    assert pwned is None
    assert names == [_hostile(2), "bash"]
    for n in (1, 2, 4, 5):
        assert _hostile(n) in shown, n


def test_a_page_of_another_origin_can_neither_post_a_form_nor_open_a_socket(
        make_server: MakeServer, browser: Any) -> None:
    """Held: a form posted from another port of the host (same site: the login cookie goes
    along) is refused, JSON smuggled in a text/plain form starts nothing, and a WebSocket
    (to any path) is closed before it opens."""
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        attacker = (
            f"<!doctype html><title>elsewhere</title><form id=f method=post "
            f"action='{served.url}/runs' enctype='text/plain'>"
            "<input name='{\"prompt\": \"from a form\", \"x\": \"' value='\"}'></form>"
            "<script>window.sockets = {};"
            "for (const path of ['/runs/news', '/', '/runs']) {"
            f"  const socket = new WebSocket('ws://{served.url[len('http://'):]}' + path);"
            "  socket.onopen = () => { window.sockets[path] = 'open'; };"
            "  socket.onclose = () => { window.sockets[path] ||= 'closed'; }; }"
            "</script>").encode()
        with logged_in_page(browser, served, bypass_csp=False) as page, \
                other_origin_page(attacker) as elsewhere:
            page.goto(elsewhere)
            page.wait_for_function("Object.keys(window.sockets).length === 3")
            sockets = page.evaluate("() => window.sockets")
            with page.expect_navigation():
                page.evaluate("() => document.getElementById('f').submit()")
            posted = page.text_content("body")
        assert sockets == {"/runs/news": "closed", "/": "closed", "/runs": "closed"}
        assert "missing or wrong token" in posted
        assert served.api.get("/runs").json()["runs"] == []
        assert fake.model_requests == []


def test_an_image_that_got_past_the_sanitiser_would_load_from_nowhere(
        make_server: MakeServer, browser: Any) -> None:
    # The policy let data: images load, which the page never uses: a fake button drawn by the
    # model, had one slipped past the sanitiser, would have shown
    svg = ("<svg xmlns='http://www.w3.org/2000/svg' width='40' height='20'>"
           "<rect width='40' height='20' fill='green'/></svg>")
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        # the server's own policy, in force
        with logged_in_page(browser, served, bypass_csp=False) as page:
            loaded = page.evaluate("""async (svg) => {
                const blob = URL.createObjectURL(new Blob([svg], {type: "image/svg+xml"}));
                const sources = {data: "data:image/svg+xml," + encodeURIComponent(svg), blob,
                                 remote: "http://127.0.0.1:9/tracker.png",
                                 own: "/static/icon.svg"};
                const outcome = {};
                for (const [name, src] of Object.entries(sources)) {
                  const image = new Image();
                  outcome[name] = await new Promise((done) => {
                    image.onload = () => done("loaded"); image.onerror = () => done("blocked");
                    image.src = src;
                  });
                }
                return outcome;
            }""", svg)
    assert loaded == {"data": "blocked", "blob": "blocked", "remote": "blocked",
                      "own": "loaded"}


def test_an_answer_nested_past_the_markdown_parser_shows_as_text(
        make_server: MakeServer, browser: Any) -> None:
    # marked recurses once per level: at 2,000 quote levels (or list levels, or emphasis marks)
    # it threw "Maximum call stack size exceeded" at every render, the turn and the run never
    # ended on the page (no run state; the steer and cancel buttons stayed) and the session,
    # reopened, showed no answer
    nested = ">" * 2_000 + " deep\n\n" + "- " * 3_000 + "listed\n\nthe last words"
    with FakeModelServer([Reply(nested, chunk_size=5_000)]) as fake:
        served = make_server(fake)
        context = browser.new_context(bypass_csp=True)
        try:
            page = context.new_page()
            page.set_default_timeout(20_000)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)[:200]))
            page.goto(f"{served.url}/#token={served.token}")
            page.wait_for_selector("#sessions li", state="attached")
            page.fill("#prompt", "nest it")
            page.click("#start")
            page.wait_for_selector(".run-state.completed")
            assert page.is_hidden("#controls")
            live = page.text_content(".turn .text")
            page.reload()
            page.click("#sessions li.session")
            page.wait_for_selector(".turn .text >> text=the last words")
            reopened = page.text_content(".turn .text")
        finally:
            context.close()
    assert errors == []
    assert live == reopened == nested


def test_a_call_whose_id_holds_a_slash_is_approved_from_the_page(
        make_server: MakeServer, browser: Any, tmp_path: Path) -> None:
    # A provider's call id is its own: "call/1" made the card's answer go to
    # /runs/R/approvals/call%2F1, which no route matched (404), and the call was denied
    scratch = tmp_path / "work" / "scratch"
    scratch.mkdir(parents=True)
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf scratch"}, id="call/1")]),
              Reply("cleaned up")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=tmp_path / "work", leave_grace=30.0)
        with logged_in_page(browser, served) as page:
            page.fill("#prompt", "clean up")
            page.click("#start")
            page.click(".approval button[data-decision=allow]")
            page.wait_for_selector(".run-state.completed")
            state = page.get_attribute(".approval", "data-state")
            error = page.text_content("#error")
    assert (state, error) == ("allowed", "")
    assert not scratch.exists()


def test_a_page_of_another_port_learns_nothing_from_what_loads(
        make_server: MakeServer, browser: Any) -> None:
    # The login cookie goes along with a same-site page's requests (another port of the host):
    # a <link rel=prefetch> there loaded for a session that exists and failed for one that
    # does not, so the page could spell out session ids one character at a time
    with FakeModelServer([Reply("ok")]) as fake:
        served = make_server(fake)
        started = served.start("secret plans")
        served.wait_finished(started["run_id"])
        session = started["session_id"]
        missing = "0" if session[0] != "0" else "1"
        probe = (
            "<!doctype html><title>elsewhere</title>"
            f"<a id=open href='{served.url}/'>the server's page</a><script>window.outcome = {{}};"
            "for (const [name, path] of Object.entries("
            f"  {{hit: '/sessions/{session[:2]}', miss: '/sessions/{missing}z',"
            f"    runs: '/runs', page: '/'}})) {{"
            "  const link = document.createElement('link');"
            f"  link.rel = 'prefetch'; link.href = '{served.url}' + path;"
            "  link.onload = () => { window.outcome[name] = 'loaded'; };"
            "  link.onerror = () => { window.outcome[name] = 'failed'; };"
            "  document.head.appendChild(link); }</script>").encode()
        with logged_in_page(browser, served) as page, other_origin_page(probe) as elsewhere:
            page.goto(elsewhere)
            page.wait_for_function("Object.keys(window.outcome).length === 4")
            outcome = page.evaluate("() => window.outcome")
            page.click("#open")  # a link followed to the page still opens it, logged in
            page.wait_for_selector("#sessions li.session")
    assert outcome == {"hit": "failed", "miss": "failed", "runs": "failed", "page": "failed"}


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, list[bytes]]]:
    """Another server on another port of 127.0.0.1 (anyone's: another user's dev server): its
    root URL and every request (line and headers, as they came) the browser sent it. Its page
    asks it for an image, a fetch with credentials and a form's navigation."""
    seen: list[bytes] = []
    page = (b"<!doctype html><title>elsewhere</title><img src='/pixel.png'>"
            b"<script>fetch('/api', {credentials: 'include'}).then(() => {"
            b"  document.title = 'fetched'; });</script>")

    class Recording(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.requestline.encode() + b"\n" + bytes(self.headers))
            body = page if self.path.partition("?")[0] == "/" else b""
            self.send_response(200 if body else 404)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Recording) as root:
        yield root, seen


def test_no_other_server_on_the_host_receives_the_token(browser: Any, tmp_path: Path) -> None:
    # The login cookie was the token itself, and a browser sends a host's cookies to every port
    # of it: any other server on 127.0.0.1 received the token with every request the browser
    # made to it (a cookie an older version set, too)
    with FakeModelServer([Reply("one answer")]) as fake, serve_process(
            "--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
            "--workdir", str(tmp_path)) as served, recording_server() as (elsewhere, seen):
        assert served.link is not None
        port = served.url.rsplit(":", 1)[1]
        context = browser.new_context(bypass_csp=True)
        try:
            context.add_cookies([{"name": f"loopwright_token_{port}", "value": served.token,
                                  "url": served.url}])  # the old version's login cookie
            page = context.new_page()
            page.set_default_timeout(20_000)
            page.goto(served.link)
            page.wait_for_selector("#sessions li", state="attached")
            page.fill("#prompt", "hello")
            page.click("#start")  # the event stream, read with the header
            page.wait_for_selector(".run-state.completed")
            page.reload()  # the tab keeps its login
            page.wait_for_selector("#sessions li.session", state="attached")
            second = context.new_page()  # a second tab from the printed link
            second.goto(served.link)
            second.wait_for_selector("#sessions li.session", state="attached")
            page.goto(f"{elsewhere}/")
            page.wait_for_function("document.title === 'fetched'")
            page.goto(f"{elsewhere}/?from=address-bar")
            cookies = context.cookies()
        finally:
            context.close()
    assert len(seen) >= 4, seen
    for request in seen:
        assert served.token.encode() not in request, request
        assert quote(served.token, safe="").encode() not in request, request
    assert [c["name"] for c in cookies if c["name"].startswith("loopwright")] == []


def test_a_tab_without_the_link_asks_for_it_and_sends_nothing(
        make_server: MakeServer, browser: Any) -> None:
    """Held: the page opened from its bare address (a bookmark, a new tab) says to open the
    printed link, calls no API route, and a token in the query (the old link) is not taken."""
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        context = browser.new_context(bypass_csp=True)
        try:
            page = context.new_page()
            page.set_default_timeout(20_000)
            asked: list[str] = []
            page.on("request", lambda request: asked.append(request.url))
            page.goto(f"{served.url}/?token={served.token}")
            page.wait_for_selector("#error >> text=Open the link")
            page.wait_for_timeout(300)
            assert stored_token(page) is None
            assert page.url == f"{served.url}/"
        finally:
            context.close()
    paths = {url.removeprefix(served.url).partition("?")[0] for url in asked}
    assert all(path == "/" or path.startswith("/static/") for path in paths), paths
