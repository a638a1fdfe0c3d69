"""The web page's views in Debian's Chromium (Playwright) against a real server and the fake
model server: answers as sanitised, highlighted Markdown; what the agent is doing and which runs
and sessions are live, from the event streams; approval cards worded by their state; the usage
charts; the batch view; and the whole page at 390 px and 1280 px (screenshots saved under
$LOOPWRIGHT_SCREENSHOTS when set, to look at).

Every check that a thing shows "at once" waits for it while the run it belongs to is still
running (the fake model holds its reply back): the page used to learn of them only at the end.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from serve_helpers import MakeServer, Served

from loopwright.batch.results import ResultRow
from loopwright.testing import FakeModelServer, Reply, call

HOSTILE_MARKDOWN = """## Plan

1. read the file
2. change it

| step | done |
|---|---|
| read | yes |

```python
def answer():
    return 42
```

A [good link](https://example.org/docs) and a [bad one](javascript:window.pwned=1), a
[shouting one](JaVaScRiPt:window.pwned=2) and <a href="javascript:window.pwned=3">raw</a>.
<img src=x onerror="window.pwned=4"> ![tracker](http://127.0.0.1:9/leak.png)
<script>window.pwned = 5</script><iframe src="javascript:window.pwned=6"></iframe>
<svg onload="window.pwned=7"><circle r="5"/></svg>
<details open ontoggle="window.pwned=8"><summary>s</summary>x</details>
<div style="position:fixed;inset:0">cover</div><form action="/runs"><button>go</button></form>
[data](data:text/html,<script>window.pwned=9</script>)
"""


def _store_events(db: Path, session_id: str, run_id: str, events: list[dict[str, Any]]) -> None:
    """Append event rows to a stored session, as a recorder would (a second connection to the
    server's SQLite file; the blocking store, as Playwright holds this thread's event loop)."""
    from loopwright.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    try:
        store.record_events(session_id, run_id, events)
    finally:
        store.close()


def _start(page: Any, prompt: str) -> None:
    page.fill("#prompt", prompt)
    page.click("#start")


def _shoot(page: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("LOOPWRIGHT_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_an_answer_is_rendered_as_markdown_highlighted_and_sanitised(
        make_server: MakeServer, open_page: Any) -> None:
    with FakeModelServer([Reply(HOSTILE_MARKDOWN, chunk_size=40)]) as fake:
        page = open_page(make_server(fake))
        _start(page, "plan it")
        page.wait_for_selector(".run-state.completed")
        text = page.query_selector(".turn .text")
        assert text.query_selector("h2").text_content() == "Plan"
        assert len(text.query_selector_all("ol > li")) == 2
        assert text.query_selector("table td").text_content() == "read"
        code = text.query_selector("pre code.language-python.hljs")
        assert code is not None and code.query_selector(".hljs-keyword").text_content() == "def"
        links = page.evaluate("""() => [...document.querySelectorAll('.turn .text a')]
            .map((a) => [a.textContent, a.getAttribute('href'), a.target, a.rel])""")
        assert links[0] == ["good link", "https://example.org/docs", "_blank",
                            "noopener noreferrer nofollow"]
        assert all(href is None for _, href, _, _ in links[1:]), links
        found = page.evaluate("""() => [...document.querySelectorAll(
            '.turn .text :is(img, script, iframe, svg, form, button, [style], [onerror],'
            + ' [ontoggle], [onload])')].map((n) => n.outerHTML)""")
        assert found == []
        for link in page.query_selector_all(".turn .text a:not([href])"):
            link.click()
        assert page.evaluate("window.pwned") is None
        assert "cover" in text.text_content()  # the words stay, as text


def test_activity_and_new_sessions_show_while_the_model_is_still_thinking(
        make_server: MakeServer, open_page: Any, tmp_path: Path) -> None:
    with FakeModelServer([Reply("late", delay=30.0), Reply("later", delay=30.0)]) as fake:
        served = make_server(fake)
        page = open_page(served)
        assert page.text_content("#live-count") == "0 live run(s)"
        _start(page, "think hard")
        activity = page.wait_for_selector(".turn .head .activity.busy")
        assert activity.text_content().startswith("waiting for the model")
        page.wait_for_selector(".activity.busy >> text=/waiting for the model · [0-9]+ s/")
        _shoot(page, "activity-1280", tmp_path)
        page.wait_for_selector("#sessions li.session.open.running")
        page.wait_for_selector("text=1 live run(s)")
        mine = page.get_attribute("#sessions li.session.open", "data-id")

        other = served.start("from another client")  # another client's run, listed at once
        page.wait_for_selector(f"#sessions li.session[data-id='{other['session_id']}'].running")
        page.wait_for_selector(f"#runs li.run[data-id='{other['run_id']}']")
        page.wait_for_selector("text=2 live run(s)")
        page.click(f"#sessions li.session[data-id='{other['session_id']}']")  # open it live
        page.wait_for_function("document.querySelector('.prompt')?.textContent"
                               " === 'from another client'")
        page.wait_for_selector(".turn .activity.busy")
        assert len(page.query_selector_all(".prompt")) == 1  # shown once, not stored + live
        assert len(page.query_selector_all(".turn")) == 1
        page.click(f"#sessions li.session[data-id='{mine}']")
        page.wait_for_function("document.querySelector('.prompt')?.textContent === 'think hard'")
        page.wait_for_selector(".turn .activity.busy")
        assert len(page.query_selector_all(".turn")) == 1

        page.click("#cancel")
        page.wait_for_selector(".run-state.cancelled")
        assert page.query_selector(".activity.busy") is None  # nothing spins after the end
        assert served.api.post(f"/runs/{other['run_id']}/cancel").status_code == 202
        page.wait_for_selector("text=0 live run(s)")
        page.wait_for_function("!document.querySelector('#sessions li.running')")


def _set_hidden(page: Any, hidden: bool) -> None:
    page.evaluate("""(hidden) => {
        Object.defineProperty(document, 'hidden', {value: hidden, configurable: true});
        document.dispatchEvent(new Event('visibilitychange')); }""", hidden)


def test_a_hidden_tab_lets_go_of_the_news_and_catches_up_when_shown(
        make_server: MakeServer, open_page: Any) -> None:
    with FakeModelServer([Reply("late", delay=30.0)]) as fake:
        served = make_server(fake)
        page = open_page(served)
        page.wait_for_selector("text=0 live run(s)")
        page.evaluate("""() => { window.newsOpened = 0; const real = window.fetch;
            window.fetch = (url, init) => {
              if (String(url).endsWith('/runs/news')) window.newsOpened += 1;
              return real(url, init); }; }""")
        _set_hidden(page, True)
        started = served.start("while nobody looked")
        _set_hidden(page, False)
        assert page.evaluate("window.newsOpened") == 1  # one stream again, no more
        page.wait_for_selector(f"#sessions li.session[data-id='{started['session_id']}'].running")
        page.wait_for_selector("text=1 live run(s)")
        assert served.api.post(f"/runs/{started['run_id']}/cancel").status_code == 202
        page.wait_for_selector("text=0 live run(s)")


def test_an_unanswered_approval_card_says_it_expired(make_server: MakeServer, open_page: Any,
                                                     tmp_path: Path) -> None:
    (tmp_path / "work" / "scratch").mkdir(parents=True)
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf scratch"}, id="call_rm")]),
              Reply("left it")]
    with FakeModelServer(script) as fake:
        page = open_page(make_server(fake, workdir=tmp_path / "work", approval_timeout=0.5))
        _start(page, "clean up")
        card = page.wait_for_selector(".approval[data-state=expired]")
        assert card.text_content().endswith(
            "Expired: no one answered within 0.5s; the call was denied.")
        assert card.query_selector("button") is None
        page.wait_for_selector(".run-state.completed")
        assert page.query_selector(".approval[data-state=denied]") is None  # stays "expired"

        page.reload()  # the stored session words it the same way
        page.click("#sessions li.session")
        page.wait_for_selector(".approval[data-state=expired]")
    assert (tmp_path / "work" / "scratch").exists()


def test_the_page_works_under_a_strict_content_security_policy(
        make_server: MakeServer, open_page: Any, tmp_path: Path) -> None:
    """No inline script, handler or style the policy would block, with Markdown, highlighted
    code, charts, an approval card and the live lists all in use."""
    (tmp_path / "work" / "scratch").mkdir(parents=True)
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf scratch"})]),
              Reply("| a | b |\n|:-:|--:|\n| 1 | 2 |\n\n```js\nconst x = 1;\n```")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=tmp_path / "work", agent={"context_window": 8_192})
        page = open_page(served, bypass_csp=False)  # the server's own policy, in force
        page.context.add_init_script("""window.violations = [];
            document.addEventListener('securitypolicyviolation',
              (e) => window.violations.push(`${e.violatedDirective} ${e.blockedURI}`));""")
        fetched: list[str] = []
        page.on("request", lambda request: fetched.append(request.url))
        page.reload()
        _start(page, "clean up and show a table")
        page.click(".approval button[data-decision=deny]")
        page.wait_for_selector(".run-state.completed")
        page.wait_for_selector(".fill-chart")
        assert page.query_selector(".turn .text pre code.hljs") is not None
        assert page.query_selector(".approval[data-state=denied]") is not None
        assert page.evaluate("window.violations") == []
        assert fetched and all(url.startswith(f"{served.url}/") for url in fetched), fetched
        assert f"{served.url}/static/vendor/marked.umd.js" in fetched  # vendored, served here
        # the policy is in force: an inline style attribute is reported
        page.evaluate("""document.body.insertAdjacentHTML('beforeend',
                                                          '<b style="color: red">x</b>')""")
        deadline = time.monotonic() + 20  # not wait_for_function: it polls with eval
        while not page.evaluate("window.violations.length") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert page.evaluate("window.violations.length") > 0


def test_a_review_is_a_small_note_in_its_turn(make_server: MakeServer, open_page: Any,
                                              tmp_path: Path) -> None:
    """A `review` event (a check of the answer: its verdict, reason and the reviews left) is a
    note in the turn it came in; its words are text."""
    with FakeModelServer([Reply("first answer")]) as fake:
        served = make_server(fake)
        started = served.start("answer it")
        served.wait_finished(started["run_id"])
        _store_events(tmp_path / "sessions.db", started["session_id"], "run-reviewed", [
            {"type": "turn_start", "turn": 1, "agent": ""},
            {"type": "review", "check": "tests", "verdict": "revise",
             "reason": "2 tests fail <img src=x onerror=window.pwned=1>", "budget_left": 1,
             "agent": ""},
            {"type": "turn_end", "turn": 1, "usage": {}, "agent": "", "text": "revised",
             "user": ["check it"]}])
        page = open_page(served)
        page.click("#sessions li.session")
        note = page.wait_for_selector(".turn .note.review")
        assert note.text_content() == ("review tests: revise — 2 tests fail "
                                       "<img src=x onerror=window.pwned=1> — 1 left")
        assert note.evaluate("(n) => n.closest('.turn').querySelector('.text').textContent") \
            == "revised"
        assert page.query_selector("#timeline img") is None


def _session_with_everything(served: Served) -> str:
    """A finished session of three turns: a tool call, an approved edit with its diff, and a
    Markdown answer with code."""
    started = served.start("tidy the notes file")

    def approve(event: dict[str, Any]) -> bool:  # as each event arrives
        if event.get("kind") == "approval_required":
            answered = served.api.post(
                f"/runs/{started['run_id']}/approvals/{event['data']['call_id']}",
                json={"decision": "allow"})
            assert answered.status_code == 200, answered.text
        return False

    served.events(started["run_id"], stop=approve)
    session_id: str = started["session_id"]
    return session_id


def test_the_page_is_usable_at_390_and_1280_px(make_server: MakeServer, open_page: Any,
                                               tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\n")
    script = [Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]),
              Reply(tool_calls=[call("bash", {"command": "rm -rf build && printf 'alpha\\n"
                                              "gamma\\n' > notes.txt"})]),
              Reply("Done. The file now reads:\n\n```text\nalpha\ngamma\n```\n\n"
                    "- **beta** became `gamma`\n- nothing else changed")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=work, agent={"context_window": 8_192})
        _session_with_everything(served)
        for width in (1280, 390):
            page = open_page(served, width=width, height=900)
            if width == 390:
                assert page.is_hidden("#sessions")  # the list folds away behind the menu
                page.click("#menu")
                _shoot(page, "nav-390", tmp_path)
            page.click("#sessions li.session")
            page.wait_for_selector(".turn")
            assert page.is_hidden("#sessions") == (width == 390)  # opening one folds it again
            summary = page.text_content("#usage > summary")
            assert summary.startswith("Usage: 3 turn(s) · ") and "$0.00" in summary
            if width == 390:  # the charts fold away too, the totals stay in view
                assert page.is_hidden("#charts")
                _shoot(page, f"session-{width}-folded", tmp_path)
                page.click("#usage > summary")
            page.wait_for_selector(".fill-chart")
            _check_charts(page)
            assert page.query_selector(".approval[data-state=allowed]") is not None
            assert "first token -" not in page.text_content("#timeline")  # replayed words
            overflow = page.evaluate("document.documentElement.scrollWidth")
            assert overflow <= width, f"the page scrolls sideways at {width} px ({overflow})"
            box = page.query_selector("#start").bounding_box()
            assert box["x"] + box["width"] <= width
            _shoot(page, f"session-{width}", tmp_path)


def _check_charts(page: Any) -> None:
    """Three charts, each with axes, tick labels and axis names."""
    charts = page.evaluate("""() => [...document.querySelectorAll('#usage .chart')].map((c) => ({
        title: c.querySelector('figcaption').textContent,
        axes: c.querySelectorAll('line.axis').length,
        yTicks: [...c.querySelectorAll('.tick.y')].map((t) => t.textContent),
        xTicks: [...c.querySelectorAll('.tick.x')].map((t) => t.textContent),
        names: [...c.querySelectorAll('.axis-label')].map((t) => t.textContent),
        bars: c.querySelectorAll('rect.bar').length,
        line: c.querySelectorAll('polyline.line').length}))""")
    titles = [chart["title"] for chart in charts]
    assert titles[0] == "Tokens per turn"
    assert titles[1].startswith("Cost per turn and cumulative ($")
    assert titles[2] == "Context-window fill (of 8,192 tokens)"
    for chart in charts:
        assert chart["axes"] == 2 and chart["xTicks"][:3] == ["1", "2", "3"], chart
        assert chart["yTicks"][0] in ("0", "$0", "0%") and len(chart["yTicks"]) >= 3, chart
        assert chart["names"][0] == "turn"
    assert charts[0]["bars"] == 6  # input and output, three turns
    assert charts[1]["line"] == 1  # the cumulative cost
    assert charts[2]["yTicks"][-1] == "100%"


def test_the_batch_view_shows_solved_share_tasks_reasons_and_turns(
        make_server: MakeServer, open_page: Any, tmp_path: Path) -> None:
    with FakeModelServer([Reply("checked answer")]) as fake:
        served = make_server(fake)
        task_session = served.start("task one")
        served.wait_finished(task_session["run_id"])
        hostile = "no '42' in <img src=x onerror=window.pwned=1>"
        rows = [
            ResultRow(id="add", line=1, status="done", solved=True, stop_reason="completed",
                      turns=2, cost=0.0012, session_id=task_session["session_id"],
                      verdict={"passed": True, "checker": "contains", "detail": ""}),
            ResultRow(id="sub", line=2, status="done", stop_reason="completed", turns=4,
                      cost=0.0031, verdict={"passed": False, "checker": "contains",
                                            "detail": hostile}),
            ResultRow(id="mul", line=3, status="failed", error="the model server said 500"),
        ]
        out = tmp_path / "nightly"
        out.mkdir()
        (out / "results.jsonl").write_text("".join(
            f"{json.dumps(row.to_dict())}\n" for row in rows))
        served_batches = make_server(fake, batches=[out])
        for width in (1280, 390):
            page = open_page(served_batches, width=width, height=900)
            if width == 390:
                page.click("#menu")
            page.click("#batches li.batch")
            page.wait_for_selector("#batch .batch-table")
            assert page.text_content("#batch .solved-share") == "1 of 3 solved (33.3 %)"
            table = page.evaluate("""() => [...document.querySelectorAll('#batch tbody tr')]
                .map((tr) => [...tr.children].map((td) => td.textContent))""")
            assert table[0] == ["add", "done", "passed (contains)", "2", "$0.0012", ""]
            assert table[1][:5] == ["sub", "done", "failed (contains)", "4", "$0.0031"]
            assert table[2] == ["mul", "failed", "unchecked", "0", "", "the model server said 500"]
            reasons = page.text_content("#batch .failure-reasons")
            assert hostile in reasons  # as text
            assert "the model server said 500" in reasons
            bars = page.query_selector_all("#batch .turns-histogram rect.bar")
            assert len(bars) == 5  # 0 to 4 turns
            ticks = [t.text_content() for t in page.query_selector_all(
                "#batch .turns-histogram .tick.y")]
            assert ticks == ["0", "1"]  # task counts: whole numbers
            assert page.query_selector("#batch img") is None
            assert page.evaluate("window.pwned") is None
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            _shoot(page, f"batch-{width}", tmp_path)
            page.click("#batch tbody tr.link")  # a task's row opens its session
            page.wait_for_selector(".turn .text >> text=checked answer")
            assert page.is_hidden("#batch")
