"""The page's login against what else runs in the browser and on the machine, in Debian's
Chromium (Playwright) against real servers: another `loopwright serve` on the same host, and
pages of other origins posting forms or opening sockets to the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from serve_helpers import TOKEN, agent_options, serve_in_thread

from loopwright.serve.app import ServeOptions
from loopwright.testing import FakeModelServer

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
                    page.goto(f"{served.url}/?token={served.token}")
                    page.wait_for_selector("#sessions li", state="attached")
                for served in (first, second):  # each page opens again from its own cookie
                    response = page.goto(f"{served.url}/")
                    assert response is not None and response.status == 200, served.url
                    assert page.get_attribute('meta[name="loopwright-token"]',
                                              "content") == served.token
                    page.wait_for_selector("#sessions li", state="attached")
            finally:
                context.close()
