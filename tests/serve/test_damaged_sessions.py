"""`GET /sessions` with a damaged session in the store (a row a crash or another program left
half-written): never a 500 — the sessions it can read, and the damage named (a new user's
walk-through, item 8)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from serve_helpers import MakeServer

from loopwright.testing import FakeModelServer, Reply


def test_a_damaged_session_is_reported_in_the_list_never_a_500(
        make_server: MakeServer, tmp_path: Path) -> None:
    with FakeModelServer([Reply("one"), Reply("two"), Reply("three")]) as fake:
        served = make_server(fake)
        ids = []
        for prompt in ("first task", "second task", "third task"):
            started = served.start(prompt)
            served.wait_finished(started["run_id"])
            ids.append(started["session_id"])
        newest_first = ids[::-1]
        assert [s["id"] for s in served.api.get("/sessions").json()["sessions"]] == newest_first

        with sqlite3.connect(tmp_path / "sessions.db") as db:  # the middle one, by age
            db.execute("UPDATE sessions SET title = ? WHERE id = ?", (b"\xff\xfe", ids[1]))

        reply = served.api.get("/sessions")
        assert reply.status_code == 200, reply.text
        listed = reply.json()
        assert [s["id"] for s in listed["sessions"]] == [ids[2], ids[0]]  # all the others
        (damage,) = listed["damaged"]
        assert damage["id"] == ids[1] and f"sessions rm {ids[1]}" in damage["error"]
        # limit counts the sessions listed, not the damaged one
        one = served.api.get("/sessions", params={"limit": "2"}).json()
        assert [s["id"] for s in one["sessions"]] == [ids[2], ids[0]]
        # a search meets it too: the other matches, and the damage named
        found = served.api.get("/sessions", params={"q": "task"}).json()
        assert sorted(s["id"] for s in found["sessions"]) == sorted([ids[0], ids[2]])
        assert [d["id"] for d in found["damaged"]] == [ids[1]]
        assert served.api.get(f"/sessions/{ids[1]}").status_code == 404  # as before
        assert served.api.get(f"/sessions/{ids[0]}").json()["session"]["id"] == ids[0]


def test_with_no_damaged_session_the_list_has_no_damaged_key(
        make_server: MakeServer) -> None:
    with FakeModelServer([Reply("one"), Reply("two")]) as fake:
        served = make_server(fake)
        for prompt in ("first", "second"):
            served.wait_finished(served.start(prompt)["run_id"])
        listed = served.api.get("/sessions").json()
        assert len(listed["sessions"]) == 2 and "damaged" not in listed
        found = served.api.get("/sessions", params={"q": "first"}).json()
        assert len(found["sessions"]) == 1 and "damaged" not in found
