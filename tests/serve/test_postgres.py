"""Several `loopwright serve` processes on one PostgreSQL store share their sessions."""

from __future__ import annotations

import json
from pathlib import Path

from serve_helpers import serve_process

from loopwright.testing import FakeModelServer, Reply
from pg_server import fresh_database


def test_two_serve_processes_share_sessions_through_postgresql(postgres_server: str,
                                                               tmp_path: Path) -> None:
    dsn = fresh_database(postgres_server)
    script = [Reply("noted: the pelican"), Reply("slow", delay=3.0), Reply("still the pelican")]
    with FakeModelServer(script) as fake:
        flags = ("--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
                 "--workdir", str(tmp_path))
        env = {"LOOPWRIGHT_STORE": dsn}
        with serve_process(*flags, env=env) as first, serve_process(*flags, env=env) as second:
            started = first.start("remember the pelican")
            session_id = started["session_id"]
            first.wait_finished(started["run_id"])

            listed = second.api.get("/sessions").json()["sessions"]
            assert [s["id"] for s in listed] == [session_id]
            shown = second.api.get(f"/sessions/{session_id[:8]}").json()
            assert [m["content"] for m in shown["messages"]] == ["remember the pelican",
                                                                  "noted: the pelican"]
            assert second.api.get("/sessions", params={"q": "pelican"}).json()["sessions"]

            live = second.start("what was it?", session_id=session_id)  # slow reply
            busy = first.api.post("/runs", json={"prompt": "me too", "session_id": session_id})
            assert busy.status_code == 409, busy.text  # one writer per session, across servers
            second.wait_finished(live["run_id"])
            again = first.start("and now?", session_id=session_id)
            first.wait_finished(again["run_id"])
            sent = json.dumps(fake.model_requests[-1].body["messages"])
            assert "remember the pelican" in sent and "what was it?" in sent
            assert first.api.get(f"/sessions/{session_id}").json()["session"]["runs"] == 3
