"""No error answer of serve names a path of the server's (the session database, the workspace,
the user's home, a batch's directory): each is fuzzed over the real routes with unknown, odd and
damaged ids and stores, and the detail is checked in the server's log instead."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from serve_helpers import MakeServer, Served

from loopwright.testing import FakeModelServer, Reply

ODD_IDS = ["nope", "x\x00", "%", "_", "*", "a" * 3000, "..", "ünï", "' OR 1=1 --", " "]


def _leaks(served: Served, requests: list[tuple[str, str, Any]], private: list[str]
           ) -> list[tuple[str, int, str]]:
    """The error answers (path, status, body) of `requests` that name any of `private`, and
    `GET /batches`, whose batches carry their error (sessions' own directories:
    test_session_folders.py)."""
    found = []
    for method, path, body in requests:
        answer = served.api.request(method, path, json=body)
        if (answer.status_code >= 400 or path == "/batches") and \
                any(root in answer.text for root in private):
            found.append((path[:80], answer.status_code, answer.text[:200]))
    return found


def _private(tmp_path: Path) -> list[str]:
    return [str(tmp_path), str(tmp_path.resolve()), str(Path.home()), "sessions.db"]


def test_no_error_answer_names_the_store_workspace_or_home(
        make_server: MakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # "no session matches 'nope' in /home/…/sessions.db": the database's path went to every
    # client of GET /sessions/{id} and POST /runs, and a missing batch's to GET /batches
    with FakeModelServer([Reply("one"), Reply("two")]) as fake:
        served = make_server(fake, batches=[tmp_path / "gone"])
        ids = [served.start(prompt)["session_id"] for prompt in ("first", "second")]
        for run in served.api.get("/runs").json()["runs"]:
            served.wait_finished(run["id"])
        with sqlite3.connect(tmp_path / "sessions.db") as db:
            db.execute("UPDATE sessions SET title = ? WHERE id = ?", (b"\xff", ids[1]))
        requests: list[tuple[str, str, Any]] = [("GET", "/batches", None),
                                                ("GET", "/batches/0", None)]
        for odd in [*ODD_IDS, ids[1], ids[1][:4]]:
            quoted = quote(odd, safe="")
            continued = [] if odd.startswith(ids[1][:4]) else [  # no run of the damaged one
                ("POST", "/runs", {"prompt": "go on", "session_id": odd})]
            requests += [("GET", f"/sessions/{quoted}", None), *continued,
                         ("GET", f"/runs/{quoted}", None),
                         ("POST", f"/runs/{quoted}/steer", {"text": "x"}),
                         ("POST", f"/runs/{quoted}/approvals", {"call_id": odd,
                                                               "decision": "allow"})]
        requests += [("GET", "/sessions?q=%22", None), ("GET", "/sessions", None),
                     ("GET", "/sessions?model=../../etc", None)]
        with caplog.at_level(logging.WARNING, logger="loopwright.serve"):
            leaks = _leaks(served, requests, _private(tmp_path))
            missing = served.api.get("/sessions/nope")
    assert leaks == []
    assert missing.status_code == 404
    assert missing.json()["error"] == "no session matches 'nope' in (a path on the server)"
    # the operator still reads which database was asked
    assert any(str(tmp_path / "sessions.db") in record.getMessage()
               and "GET '/sessions/nope' answered 404" in record.getMessage()
               for record in caplog.records)


def test_must_not_fire_an_error_without_a_path_is_answered_as_it_is(
        make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        unknown = served.api.get("/runs/zz").json()["error"]
        bad = served.api.post("/runs", json={"prompt": "x", "workdir": "/etc"}).json()["error"]
    assert unknown == "no run zz in this server (finished runs are in /sessions)"
    assert bad.startswith("unknown field 'workdir'")

