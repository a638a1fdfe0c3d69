"""Human approval over the wire: `approval_required` events, answers by POST, "always" remembered,
and fail-closed denial on a timeout or with no approver watching."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from serve_helpers import MakeServer, Served

from loopwright.testing import FakeModelServer, Reply, call

DANGEROUS = "rm -rf scratch"


def _script(*extra: Reply) -> list[Reply]:
    return [Reply(tool_calls=[call("bash", {"command": DANGEROUS}, id="call_rm")]),
            Reply("finished"), *extra]


def _workdir(tmp_path: Path) -> Path:
    scratch = tmp_path / "work" / "scratch"
    scratch.mkdir(parents=True)
    (scratch / "file.txt").write_text("x")
    return tmp_path / "work"


def _answer_when_asked(served: Served, run_id: str, decision: str | None
                       ) -> list[dict[str, Any]]:
    """Watch the run; answer its first approval question with `decision` (None: never)."""
    def answer(event: dict[str, Any]) -> bool:  # called as each event arrives
        if event.get("kind") == "approval_required" and decision is not None:
            answered = served.api.post(f"/runs/{run_id}/approvals/{event['data']['call_id']}",
                                       json={"decision": decision})
            assert answered.status_code == 200, answered.text
        return False

    return [event for _, event in served.events(run_id, stop=answer)]


def _result(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool_result")


def test_an_approval_is_asked_over_the_wire_and_allow_runs_the_call(
        make_server: MakeServer, tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    with FakeModelServer(_script()) as fake:
        served = make_server(fake, workdir=workdir)
        run_id = served.start("clean up")["run_id"]
        events = _answer_when_asked(served, run_id, "allow")
    asked = next(e for e in events if e.get("kind") == "approval_required")
    assert asked["data"]["call_id"] == "call_rm" and asked["data"]["tool"] == "bash"
    assert asked["data"]["detail"] == DANGEROUS
    assert "recursive delete" in asked["data"]["action"]
    assert asked["data"]["timeout"] == 60
    decided = next(e for e in events if e.get("kind") == "approval")
    assert decided["data"]["allowed"] is True and decided["data"]["call_id"] == "call_rm"
    assert not _result(events)["is_error"]
    assert not (workdir / "scratch").exists()
    assert events[-1]["result"]["stop_reason"] == "completed"


def test_deny_refuses_the_call_and_tells_the_model(make_server: MakeServer,
                                                   tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    with FakeModelServer(_script()) as fake:
        served = make_server(fake, workdir=workdir)
        run_id = served.start("clean up")["run_id"]
        events = _answer_when_asked(served, run_id, "deny")
        told = str(fake.model_requests[1].body["messages"][-1]["content"])
    result = _result(events)
    assert result["is_error"] and result["data"]["denied"] is True
    assert "the user declined" in told
    assert (workdir / "scratch" / "file.txt").exists()


def test_always_is_remembered_for_the_session(make_server: MakeServer, tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    script = _script(Reply(tool_calls=[call("bash", {"command": DANGEROUS}, id="call_again")]),
                     Reply("done again"))
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=workdir)
        first = served.start("clean up")
        _answer_when_asked(served, first["run_id"], "always")
        second = served.start("once more", session_id=first["session_id"])["run_id"]
        events = _answer_when_asked(served, second, None)  # never answers: must not be asked
    assert not any(e.get("kind") == "approval_required" for e in events)
    assert not _result(events)["is_error"]


def test_no_answer_within_the_timeout_denies(make_server: MakeServer, tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    with FakeModelServer(_script()) as fake:
        served = make_server(fake, workdir=workdir, approval_timeout=0.5)
        run_id = served.start("clean up")["run_id"]
        events = _answer_when_asked(served, run_id, None)
        told = str(fake.model_requests[1].body["messages"][-1]["content"])
    assert _result(events)["data"]["denied"] is True
    assert "no one answered within 0.5s" in told
    # told apart from a "deny" (the page words the card "Expired"), before the denial itself
    kinds = [e.get("kind") for e in events if e["type"] == "status"]
    assert kinds.index("approval_expired") < kinds.index("approval")
    expired = next(e for e in events if e.get("kind") == "approval_expired")
    assert expired["data"]["call_id"] == "call_rm"
    assert expired["data"]["reason"] == "no one answered within 0.5s"
    assert (workdir / "scratch").exists()
    late = served.api.post(f"/runs/{run_id}/approvals/call_rm", json={"decision": "allow"})
    assert late.status_code == 404 and "no approval is pending" in late.json()["error"]


def test_with_no_approver_connected_the_call_is_denied(make_server: MakeServer,
                                                       tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    with FakeModelServer(_script()) as fake:
        served = make_server(fake, workdir=workdir, leave_grace=0.3)
        run_id = served.start("clean up")["run_id"]  # nobody watches this run
        assert served.wait_finished(run_id)["stop_reason"] == "completed"
        told = str(fake.model_requests[1].body["messages"][-1]["content"])
    assert "no approver is connected to the run" in told
    assert (workdir / "scratch").exists()


def test_a_bad_decision_is_refused_and_the_question_stays_open(make_server: MakeServer,
                                                               tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    with FakeModelServer(_script()) as fake:
        served = make_server(fake, workdir=workdir)
        run_id = served.start("clean up")["run_id"]
        answers: list[int] = []

        def answer_badly_then_allow(event: dict[str, Any]) -> bool:
            if event.get("kind") == "approval_required":
                url = f"/runs/{run_id}/approvals/{event['data']['call_id']}"
                answers.append(served.api.post(url, json={"decision": "maybe"}).status_code)
                answers.append(served.api.post(f"/runs/{run_id}/approvals/other",
                                               json={"decision": "allow"}).status_code)
                answers.append(served.api.post(url, json={"decision": "allow"}).status_code)
            return False

        watcher = threading.Thread(target=lambda: served.events(run_id,
                                                                stop=answer_badly_then_allow))
        watcher.start()
        watcher.join(60)
        assert served.wait_finished(run_id)["stop_reason"] == "completed"
    assert answers == [400, 404, 200]
    assert not (workdir / "scratch").exists()


def test_the_config_policy_applies_to_served_runs(make_server: MakeServer, tmp_path: Path,
                                                  isolated_home: Path) -> None:
    config = isolated_home / ".config" / "loopwright"
    config.mkdir(parents=True)
    (config / "loopwright.toml").write_text('[policy.bash]\ndeny = ["\\\\brm\\\\b"]\n')
    workdir = _workdir(tmp_path)
    with FakeModelServer(_script()) as fake:
        served = make_server(fake, workdir=workdir)
        events = _answer_when_asked(served, served.start("clean up")["run_id"], "allow")
    assert not any(e.get("kind") == "approval_required" for e in events)  # refused outright
    assert "deny rule" in _result(events)["content"]
    assert (workdir / "scratch").exists()


def test_a_sub_agents_call_is_approved_through_its_parents_run(make_server: MakeServer,
                                                               tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    script = [Reply(tool_calls=[call("delegate", {"task": "remove the scratch directory"})]),
              Reply(tool_calls=[call("bash", {"command": DANGEROUS}, id="child_rm")]),
              Reply("child: removed"), Reply("parent: done")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=workdir)
        events = _answer_when_asked(served, served.start("delegate it")["run_id"], "allow")
    asked = next(e for e in events if e.get("kind") == "approval_required")
    assert asked["agent"].startswith("sub-") and asked["data"]["call_id"] == "child_rm"
    assert not (workdir / "scratch").exists()
    assert events[-1]["result"]["output"] == "parent: done"
