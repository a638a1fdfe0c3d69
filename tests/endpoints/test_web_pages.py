"""A web page where the model API should answer — a web UI's address or a captive portal (200),
a proxy's error page (502, 404) — is named by its status and title, never shown as markup, and
not retried when it cannot change (issue: a new user's walk-through, items 1-3)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from cpu_growth import cpu_growth
from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Fault, Reply
from shared_helpers import cli_env, http_server

FAST = RetryPolicy(base_delay=0.01, jitter=0)
FILLER = "<p>" + "lorem ipsum " * 400 + "</p>"
PAGE = ("<!DOCTYPE html>\n<html><head><title>Open WebUI</title><style>body{}</style></head>"
        f"<body>{FILLER}</body></html>")


def page_server(status: int, page: str | Callable[[], str] = PAGE
                ) -> Iterator[tuple[str, list[str]]]:
    """A server answering every GET and POST with `page` (or what `page()` gives at the time)
    and `status`; its root URL and the requests it got (\"POST /v1/chat/completions\")."""
    seen: list[str] = []

    class Pages(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = (page if isinstance(page, str) else page()).encode()
            self.send_response(status)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    with http_server(Pages) as root:
        yield root, seen


@pytest.fixture
def web_ui() -> Iterator[tuple[str, list[str]]]:
    yield from page_server(200)


def posts(seen: list[str]) -> list[str]:
    return [line for line in seen if line.startswith("POST")]


def test_cli_run_at_a_web_page_says_so_in_one_line_and_exits_6(
        tmp_path: Path, web_ui: tuple[str, list[str]]) -> None:
    root, seen = web_ui
    proc = subprocess.run([sys.executable, "-m", "loopwright", "run", "Hi", "--model", "m",
                           "--base-url", root], cwd=tmp_path, env=cli_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 6, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line == (f"loopwright: the server at {root}/v1 answered with an HTML page "
                    "('Open WebUI'), not the model API: check the address — an "
                    "OpenAI-compatible API usually lives under /v1 (pass --base-url "
                    "http://HOST:PORT/v1)")
    assert posts(seen) == []  # found before the first model request


@pytest.mark.parametrize("stream", [True, False])
async def test_the_library_at_a_web_page_fails_once_naming_it(
        web_ui: tuple[str, list[str]], stream: bool) -> None:
    root, seen = web_ui
    agent = Agent("m", base_url=root, api_key="k", retry=FAST, stream=stream)
    result = await agent.run("Hi", raise_on_error=False)
    assert result.stop_reason == "error"
    assert result.error is not None
    assert "answered with an HTML page ('Open WebUI'), not the model API" in result.error
    assert 'pass base_url="http://HOST:PORT/v1" (--base-url' in result.error  # the library's
    assert "JSONDecodeError" not in result.error and "lorem" not in result.error
    assert len(posts(seen)) == 1  # a web page does not become the API on a retry


async def test_a_reply_that_is_not_json_nor_a_page_is_still_retried() -> None:
    # a glitch (a truncated body, a stray line) may pass: the rule is for web pages only
    with FakeModelServer(replies=[Fault.status(200, body="upstream hiccup"), Reply(text="ok")]
                         ) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False).run("Hi")
    assert result.output == "ok"


NGINX_502 = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>"
             "502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n" + FILLER
             + "</body>\r\n</html>\r\n")


@pytest.mark.parametrize(("status", "page", "extract", "tries"), [
    (502, NGINX_502, "502 Bad Gateway", 6),  # a proxy's page: the upstream may come back
    (404, "<!doctype html><html><body><script>var x = '<b>';</script>\n<h1>Not here</h1>"
          f"<p>The page you asked for is gone.</p>{FILLER}</body></html>", "Not here", 1),
])
async def test_an_html_error_page_is_shown_by_its_status_and_a_short_extract(
        status: int, page: str, extract: str, tries: int) -> None:
    for root, seen in page_server(status, page):
        result = await Agent("m", base_url=root, api_key="k", retry=FAST).run(
            "Hi", raise_on_error=False)
        assert result.error is not None
        assert result.error.endswith(f"HTTP {status} from {root}/v1: {extract}")
        assert "<" not in result.error and "lorem" not in result.error
        assert len(posts(seen)) == tries


async def test_a_plain_text_error_body_is_still_shown_as_it_is() -> None:
    with FakeModelServer(replies=[Fault.status(404, body="model 'm' not found, try pulling it")]
                         ) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST).run(
            "Hi", raise_on_error=False)
        base_url = server.base_url
    assert result.error is not None
    assert result.error.endswith(f"HTTP 404 from {base_url}: model 'm' not found, try "
                                 "pulling it")


@pytest.mark.parametrize(("status", "tries"), [
    (501, 1), (505, 1), (511, 1),  # they describe the server: the same request, the same answer
    (500, 6), (502, 6), (503, 6), (504, 6), (429, 6), (599, 6),
])
async def test_only_statuses_that_may_heal_are_retried(status: int, tries: int) -> None:
    with FakeModelServer(replies=[Fault.status(status)] * tries) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST).run(
            "Hi", raise_on_error=False)
        assert result.error is not None and f"HTTP {status}" in result.error
        assert len(server.model_requests) == tries


@pytest.mark.parametrize("unclosed", ["<title>", "<script>", "<"])
async def test_a_page_of_unclosed_tags_is_read_in_linear_time(unclosed: str) -> None:
    # 20,000 tags never closed (160 KB): the title, unseen-block and tag searches each began at
    # every one and ran to the end, tens of seconds on the event loop
    tags = [0]
    for root, seen in page_server(404, lambda: "<!DOCTYPE html><html><body><h1>Not here</h1>"
                                  + unclosed * tags[0]):

        async def read(count: int, root: str = root, seen: list[str] = seen) -> None:
            tags[0] = count
            asked = len(posts(seen))
            result = await Agent("m", base_url=root, api_key="k", retry=FAST).run(
                "Hi", raise_on_error=False)
            assert result.error is not None and "HTTP 404" in result.error
            assert len(posts(seen)) == asked + 1

        assert await cpu_growth(read, 2_500, 20_000) < 8
