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
        for prompt in ("first", "second", "third"):
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
        assert [s["id"] for s in listed["sessions"]] == [ids[2]]  # the store stops at it
        (damage,) = listed["damaged"]
        assert ids[1] in damage["error"]
        # searching meets it too
        assert served.api.get("/sessions", params={"q": "second"}).status_code == 200
        assert served.api.get(f"/sessions/{ids[1]}").status_code == 404  # as before
        assert served.api.get(f"/sessions/{ids[0]}").json()["session"]["id"] == ids[0]
