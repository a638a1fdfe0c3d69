"""The web page in a real browser (Debian's headless Chromium, driven by Playwright) against a
real server and the fake model server: a run streaming in (with a retry marked), an approval from
the page, a steer and a cancel, an old session opened from the searchable list."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import TOKEN, MakeServer, Served

from loopwright.testing import FakeModelServer, Fault, Reply, call
from shared_helpers import require_component

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]
WAIT_MS = 20_000


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

    def open_(served: Served) -> Any:
        context = browser.new_context()
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{served.url}/?token={TOKEN}")  # the printed link: sets the cookie
        page.wait_for_selector("#sessions li")
        return page

    yield open_
    for context in contexts:
        context.close()


def _start(page: Any, prompt: str) -> None:
    page.fill("#prompt", prompt)
    page.click("#start")


def test_a_run_started_from_the_page_streams_its_text_in(make_server: MakeServer,
                                                          open_page: Any) -> None:
    # markup from the model or the user is shown as text, never run or rendered
    text = "Streaming <img src=x onerror='window.pwned=1'> " + " ".join(
        f"piece{n}" for n in range(60))
    with FakeModelServer([Fault.rate_limit(retry_after_ms=10), Reply(text, chunk_size=6)]) as fake:
        page = open_page(make_server(fake))
        page.evaluate("""() => { window.textUpdates = 0;
            new MutationObserver(() => { window.textUpdates += 1; })
              .observe(document.getElementById('timeline'),
                       {childList: true, subtree: true, characterData: true}); }""")
        _start(page, "say <b>a lot</b>")
        page.wait_for_selector(".run-state.completed")
        assert page.text_content(".prompt") == "say <b>a lot</b>"
        assert page.text_content(".turn .text") == text
        assert page.query_selector("#timeline img, #timeline b, #sessions b") is None
        assert page.evaluate("window.pwned") is None
        assert page.evaluate("window.textUpdates") > 10  # it arrived in pieces, as they came
        meta = page.text_content(".turn .head .meta")  # per-turn tokens and model latency
        assert " in · " in meta and " out · " in meta and "model " in meta
        assert page.text_content(".turn .head .cost").startswith("$")  # and cost
        assert "2 attempts" in page.text_content(".note.retry:last-of-type")
        page.wait_for_selector("#usage svg rect")  # the usage chart
        assert "429" in page.text_content(".note.retry")  # the retry is marked
        page.wait_for_selector("#sessions li.session.open")  # the new session is listed


def test_a_dangerous_command_is_approved_from_the_page(make_server: MakeServer,
                                                       open_page: Any, tmp_path: Path) -> None:
    scratch = tmp_path / "work" / "scratch"
    scratch.mkdir(parents=True)
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf scratch"}, id="call_rm")]),
              Reply("cleaned up")]
    with FakeModelServer(script) as fake:
        page = open_page(make_server(fake, workdir=tmp_path / "work"))
        _start(page, "clean up")
        card = page.wait_for_selector(".approval")
        assert "recursive delete" in card.text_content()
        assert "rm -rf scratch" in card.text_content()
        page.click(".approval button[data-decision=allow]")
        page.wait_for_selector(".run-state.completed")
        assert "allowed" in page.text_content(".approval.answered")
        assert "done in" in page.text_content(".tool .state")
    assert not scratch.exists()


def test_a_run_is_steered_and_cancelled_from_the_page(make_server: MakeServer,
                                                      open_page: Any) -> None:
    with FakeModelServer([Reply("thinking", delay=30.0)]) as fake:
        page = open_page(make_server(fake))
        _start(page, "take your time")
        page.wait_for_selector(".turn")
        page.fill("#steer-text", "hurry up")
        page.click("#steer")
        page.wait_for_selector("text=steered: hurry up")
        page.click("#cancel")
        page.wait_for_selector(".run-state.cancelled")
        assert page.is_hidden("#controls")


def test_an_old_session_opens_from_the_searchable_list(make_server: MakeServer,
                                                       open_page: Any) -> None:
    script = [Reply(tool_calls=[call("list_dir", {"path": "."})], reasoning="look around",
                    delay=1.0),
              Reply("the narwhal report"), Reply("walrus answer"), Reply("other answer")]
    with FakeModelServer(script) as fake:
        served = make_server(fake)
        first = served.start("find the narwhal")
        # steered mid-run, then continued: the stored user messages no longer match runs 1:1
        assert served.api.post(f"/runs/{first['run_id']}/steer",
                               json={"text": "mind the walrus"}).status_code == 202
        served.wait_finished(first["run_id"])
        served.wait_finished(served.start("and the walrus?",
                                          session_id=first["session_id"])["run_id"])
        served.wait_finished(served.start("something else")["run_id"])
        page = open_page(served)
        assert len(page.query_selector_all("#sessions li.session")) == 2
        page.fill("#search", "narwhal")
        page.wait_for_function("document.querySelectorAll('#sessions li.session').length === 1")
        page.click("#sessions li.session")
        page.wait_for_function("document.querySelectorAll('.turn').length === 3")
        prompts = [p.text_content() for p in page.query_selector_all(".prompt")]
        assert prompts == ["find the narwhal", "and the walrus?"]
        assert "steered: mind the walrus" in page.text_content("#timeline")
        turns = page.query_selector_all(".turn")
        assert "list_dir" in turns[0].text_content()
        assert "done in" in turns[0].query_selector(".tool .state").text_content()
        assert turns[0].query_selector(".reasoning").text_content() == "look around"
        assert turns[1].query_selector(".text").text_content() == "the narwhal report"
        assert turns[2].query_selector(".text").text_content() == "walrus answer"
        assert "model " in turns[1].query_selector(".meta").text_content()
        page.wait_for_selector("#usage svg rect")
