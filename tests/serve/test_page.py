"""The web page in a real browser (Debian's headless Chromium, driven by Playwright) against a
real server and the fake model server: a run streaming in (with a retry marked), an approval from
the page, a steer and a cancel, an old session opened from the searchable list, a compaction
marked in its turn (live and reopened), a sub-agent nested under its parent's call (approved
from the page; live and reopened), and a page of another origin kept out."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from serve_helpers import MakeServer, other_origin_page

from loopwright import tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptItem, call


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
        # the answer is Markdown; the raw <img> in it is dropped by the sanitiser, not run
        assert page.text_content(".turn .text").startswith("Streaming ")
        assert page.text_content(".turn .text").endswith("piece58 piece59")
        assert page.query_selector("#timeline img, #timeline b, #sessions b") is None
        assert page.evaluate("window.pwned") is None
        assert page.evaluate("window.textUpdates") > 1  # it arrived in pieces, as they came
        meta = page.text_content(".turn .head .meta")  # per-turn tokens and model latency
        assert " in · " in meta and " out · " in meta and "model " in meta
        assert page.text_content(".turn .head .cost").startswith("$")  # and cost
        assert "2 attempts" in page.text_content(".note.retry:last-of-type")
        page.wait_for_selector("#usage svg rect")  # the usage chart
        assert "429" in page.text_content(".note.retry")  # the retry is marked
        page.wait_for_selector("#sessions li.session.open")  # the new session is listed


def test_a_reply_broken_off_and_answered_by_a_fallback_shows_the_fallbacks_alone(
        make_server: MakeServer, open_page: Any) -> None:
    from loopwright.endpoints.retry import RetryPolicy

    broken = Fault.cut_stream(Reply("Let me look at the notes first.", chunk_size=6),
                              after_chunks=3)
    with FakeModelServer([broken, Fault.disconnect()]) as primary, \
            FakeModelServer([Reply("Backup answer.")]) as backup:
        page = open_page(make_server(primary, agent={
            "fallbacks": [{"model": "b", "base_url": backup.base_url}],
            "retry": RetryPolicy(attempts=2, base_delay=0.01)}))
        _start(page, "read the notes")
        page.wait_for_selector(".run-state.completed")
        # the broken reply's words were left in front of the fallback's: "Let me loBackup…"
        assert page.text_content(".turn .text") == "Backup answer."
        notes = page.eval_on_selector_all(".note.retry", "notes => notes.map(n => n.textContent)")
        assert any(note.startswith("fallback: ") and "continuing on custom b" in note
                   for note in notes)


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
        assert card.get_attribute("data-state") == "pending"
        assert "Waiting for your answer" in card.text_content()
        page.click(".approval button[data-decision=allow]")
        page.wait_for_selector(".run-state.completed")
        answered = page.query_selector(".approval.answered")
        assert answered.get_attribute("data-state") == "allowed"
        assert "Allowed: approved by the user" in answered.text_content()
        # worded by its state: nothing on an answered card speaks of waiting or denial
        assert "Waiting" not in answered.text_content()
        assert "enied" not in answered.text_content()
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


@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\n" for n in range(60))  # ~900 tokens


def test_a_compacted_context_is_marked_in_the_timeline_live_and_reopened(
        make_server: MakeServer, open_page: Any) -> None:
    # three ~900-token results a turn in a 4,096-token window: pruning is not enough by turn 3
    calls = [Reply(tool_calls=[call("dump", {"part": 3 * n + k}) for k in range(3)])
             for n in range(4)]

    def answer(request: RecordedRequest) -> ScriptItem:
        first = request.body["messages"][0]
        if first["role"] == "system" and first["content"] == SUMMARY_SYSTEM:
            return Reply("## Goal\nCollect the parts.\n## Done\nSome parts.\n## Next steps\nMore.")
        return calls.pop(0) if calls else Reply("collected them all")

    with FakeModelServer(handler=answer) as fake:
        served = make_server(fake, agent={"tools": [dump], "context_window": 4_096})
        page = open_page(served)
        _start(page, "collect every part")
        page.wait_for_selector(".run-state.completed", timeout=60_000)
        live = [n.text_content() for n in page.query_selector_all(".note.compaction")]
        assert any(text.startswith("compacted: compacted") for text in live), live
        assert any(text.startswith("compaction call to ") for text in live), live
        assert _compacted_in_turns(page) == ["3"]  # marked in the turn it happened before

        page.reload()  # the stored session, opened from the list, marks it the same way
        page.wait_for_selector("#sessions li.session")
        page.click("#sessions li.session")
        page.wait_for_function("document.querySelectorAll('.turn').length === 5")
        assert _compacted_in_turns(page) == ["3"]


def _compacted_in_turns(page: Any) -> list[str]:
    """The turn numbers whose boxes hold a "compacted" note (every such note is in a turn)."""
    turns: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('.note.compaction')]
                   .filter((n) => n.textContent.startsWith('compacted:'))
                   .map((n) => { const turn = n.closest('.turn');
                                 return turn ? turn.dataset.turn : 'outside'; })""")
    return turns


def _other_origin() -> contextlib.AbstractContextManager[str]:
    """A blank page of another origin, same site (a SameSite=Strict cookie would go along)."""
    return other_origin_page(b"<!doctype html><title>elsewhere</title>")


def test_a_page_of_another_origin_cannot_read_the_api_or_start_a_run(
        make_server: MakeServer, open_page: Any) -> None:
    with FakeModelServer([]) as fake, _other_origin() as elsewhere:
        served = make_server(fake)
        page = open_page(served)  # logged in, in this browser context
        page.goto(elsewhere)
        outcome = page.evaluate("""async (server) => {
            const tries = {};
            for (const path of ["/sessions", "/runs", "/health"]) {
              try { await fetch(server + path, {credentials: "include"}); tries[path] = "read"; }
              catch (error) { tries[path] = "blocked"; }
            }
            try {  // a preflighted request: JSON with the header a token would go in
              await fetch(server + "/runs", {method: "POST", credentials: "include",
                headers: {"content-type": "application/json", authorization: "Bearer guess"},
                body: JSON.stringify({prompt: "from elsewhere"})});
              tries.preflighted = "sent";
            } catch (error) { tries.preflighted = "blocked"; }
            // a simple request goes out without a preflight; it must not start anything
            await fetch(server + "/runs", {method: "POST", mode: "no-cors",
              credentials: "include", headers: {"content-type": "text/plain"},
              body: JSON.stringify({prompt: "from elsewhere"})});
            return tries;
          }""", served.url)
        assert outcome == {"/sessions": "blocked", "/runs": "blocked", "/health": "blocked",
                           "preflighted": "blocked"}
        assert served.api.get("/runs").json()["runs"] == []  # nothing was started
        assert fake.model_requests == []


def test_a_sub_agent_is_nested_under_its_parents_call_and_approved_from_there(
        make_server: MakeServer, open_page: Any, tmp_path: Path) -> None:
    scratch = tmp_path / "work" / "scratch"
    scratch.mkdir(parents=True)
    script = [Reply(tool_calls=[call("delegate", {"task": "remove the scratch directory"})]),
              Reply(tool_calls=[call("bash", {"command": "rm -rf scratch"}, id="child_rm")]),
              Reply("child: removed"), Reply("parent: done")]
    with FakeModelServer(script) as fake:
        page = open_page(make_server(fake, workdir=tmp_path / "work"))
        _start(page, "delegate it")
        card = page.wait_for_selector(".subagent .approval")  # the child's question, nested
        assert "rm -rf scratch" in card.text_content()
        page.click(".subagent .approval button[data-decision=allow]")
        page.wait_for_selector(".run-state.completed")
        live = _nesting(page)
        assert live["summary"].startswith("sub-agent sub-")
        assert live["underDelegateTurn"] and live["childTexts"] == ["child: removed"]
        assert live["parentTexts"] == ["parent: done"]  # the child's words are not the parent's
        assert not scratch.exists()

        page.reload()  # the stored session nests it the same way
        page.wait_for_selector("#sessions li.session")
        page.click("#sessions li.session")
        page.wait_for_selector(".subagent .tool")
        stored = _nesting(page)
        assert stored["summary"] == live["summary"] and stored["underDelegateTurn"]
        assert "bash" in stored["childTools"]


def _nesting(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate("""() => {
        const nest = document.querySelector('.subagent');
        const turn = nest.closest('.turn');
        return {summary: nest.querySelector('summary').textContent,
                underDelegateTurn: turn !== null && turn.textContent.includes('delegate'),
                childTexts: [...nest.querySelectorAll('.turn .text')].map((t) => t.textContent)
                            .filter((t) => t),
                childTools: [...nest.querySelectorAll('.tool')].map((t) => t.textContent)
                            .join(' '),
                parentTexts: [...document.querySelectorAll('#timeline > .turn .text')]
                    .filter((t) => !t.closest('.subagent')).map((t) => t.textContent)
                    .filter((t) => t)};
      }""")
    return found
