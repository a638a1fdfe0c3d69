"""Approving tool calls whose ids a URL's path would change: a model chooses its call ids, and the
page (Debian's Chromium) and the HTTP API must answer exactly the call each card shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from serve_helpers import MakeServer, logged_in_page

from loopwright.testing import FakeModelServer, Reply, call

IDS = [".", "..", "%2e", "%2e%2e", "a/../b", "a/./b", "q?x=1#frag", "with space",
       "überprüft ✓", "/", "call_1"]
"""Ids a provider may send: dot segments, percent-escapes, "/", "?" and "#", spaces,
non-ASCII, and a plain one."""
DENIED = {"..", "%2e", "a/./b", "/"}


def _calls_in(workdir: Path) -> list[Reply]:
    """One reply asking to delete one directory per id (each needs approval), then an answer."""
    for number in range(len(IDS)):
        (workdir / f"dir{number}").mkdir(parents=True)
    calls = [call("bash", {"command": f"rm -rf dir{number}"}, id=call_id)
             for number, call_id in enumerate(IDS)]
    return [Reply(tool_calls=calls), Reply("done")]


def _left(workdir: Path) -> set[str]:
    """The ids whose directory is still there: the calls that were denied."""
    return {call_id for number, call_id in enumerate(IDS) if (workdir / f"dir{number}").exists()}


def test_every_call_id_a_provider_may_send_is_answered_from_the_page(
        make_server: MakeServer, browser: Any, tmp_path: Path) -> None:
    # "." and ".." went into the URL's path (/runs/R/approvals/..), which the browser resolves
    # as a dot segment (and "%2e" with it) before sending: the answer reached another route,
    # the card showed the error and the call was denied when its time ran out
    workdir = tmp_path / "work"
    with FakeModelServer(_calls_in(workdir)) as fake:
        served = make_server(fake, workdir=workdir, leave_grace=30.0)
        with logged_in_page(browser, served) as page:
            page.fill("#prompt", "clean up")
            page.click("#start")
            answered: list[str] = []
            while len(answered) < len(IDS):
                card = page.wait_for_selector(".approval[data-state=pending] button:enabled")
                assert card is not None
                pending = page.locator(".approval[data-state=pending]").first
                call_id = pending.get_attribute("data-call-id")
                assert call_id is not None and call_id not in answered
                decision = "deny" if call_id in DENIED else "allow"
                pending.locator(f"button[data-decision={decision}]").click()
                page.wait_for_function(  # the card takes its answer before the next one
                    "id => [...document.querySelectorAll('.approval')].some(card => "
                    "card.dataset.callId === id && card.dataset.state !== 'pending')", arg=call_id)
                answered.append(call_id)
            page.wait_for_selector(".run-state.completed")
            states = {card.get_attribute("data-call-id"): card.get_attribute("data-state")
                      for card in page.query_selector_all(".approval")}
            error = page.text_content("#error")
    assert error == ""
    assert states == {call_id: "denied" if call_id in DENIED else "allowed" for call_id in IDS}
    assert _left(workdir) == DENIED


def _near(call_id: str) -> set[str]:
    """Ids close to `call_id` that are not it: a URL's or a careless client's changes to it."""
    return {call_id + "/", "/" + call_id, call_id.upper(), quote(call_id, safe=""),
            call_id + "~2", f" {call_id}", call_id.encode("ascii", "ignore").decode(), ""} - {
        call_id}


def test_over_the_api_a_crafted_id_answers_no_other_call(
        make_server: MakeServer, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    with FakeModelServer(_calls_in(workdir)) as fake:
        served = make_server(fake, workdir=workdir, leave_grace=30.0)
        run_id = served.start("clean up")["run_id"]
        approvals = f"/runs/{run_id}/approvals"
        asked: list[str] = []

        def answer(event: dict[str, Any]) -> bool:  # each question as it comes
            if event.get("kind") != "approval_required":
                return False
            call_id = event["data"]["call_id"]
            asked.append(call_id)
            # must not fire: ids that are not asked, however close to the one that is
            for near in _near(call_id):
                wrong = served.api.post(approvals, json={"call_id": near, "decision": "allow"})
                assert wrong.status_code == 404, (near, wrong.text)
            # no id at all (what a path-form answer to ".." becomes once a browser resolved it)
            missing = served.api.post(approvals, json={"decision": "allow"})
            assert missing.status_code == 400 and "call_id" in missing.json()["error"]
            assert call_id in _left(workdir)
            answered = served.api.post(approvals, json={
                "call_id": call_id, "decision": "deny" if call_id in DENIED else "allow"})
            assert answered.status_code == 200 and answered.json()["call_id"] == call_id
            return len(asked) == len(IDS)

        served.events(run_id, stop=answer)
        served.wait_finished(run_id)
    assert sorted(asked) == sorted(IDS)
    assert _left(workdir) == DENIED
