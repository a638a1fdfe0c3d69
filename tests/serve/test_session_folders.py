"""A session's directory in serve's answers: never the server's path (`cwd`), only `folder`,
the directory relative to the served workspace, and null for a session that ran elsewhere (the
store is shared with the CLI); and a run's events without the system prompt, which names it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from serve_helpers import MakeServer

from loopwright.testing import FakeModelServer, Reply, call

RAN_IN = {  # the session's prompt → the directory stored as its cwd (under tmp_path)
    "in the workspace": "work",
    "in a folder of it": "work/src/app",
    "in a sibling whose name starts like it": "work-old",
    "in a folder that climbs out of it": "work/../secret",
    "elsewhere on the machine": "home/alice/project",
}


def test_sessions_show_their_folder_in_the_workspace_and_no_path_of_the_server(
        make_server: MakeServer, tmp_path: Path) -> None:
    # every answer with a session in it (the list, a search, one session) carried "cwd":
    # "/home/alice/…/work": the machine's paths and the user's name to anyone with a page open
    (tmp_path / "work").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "work")  # served by a path that is a symlink
    with FakeModelServer([Reply(f"answer {n}") for n in range(len(RAN_IN))]) as fake:
        served = make_server(fake, workdir=tmp_path / "link")
        ids = {}
        for prompt in RAN_IN:
            started = served.start(prompt)
            served.wait_finished(started["run_id"])
            ids[prompt] = started["session_id"]
        with sqlite3.connect(tmp_path / "sessions.db") as db:
            for prompt, directory in RAN_IN.items():
                db.execute("UPDATE sessions SET cwd = ? WHERE id = ?",
                           (f"{tmp_path}/{directory}", ids[prompt]))
        listed = served.api.get("/sessions").json()["sessions"]
        found = served.api.get("/sessions", params={"q": "folder"}).json()["sessions"]
        details = {prompt: served.api.get(f"/sessions/{ids[prompt]}").json()
                   for prompt in RAN_IN}
    folders = {session["title"]: session["folder"] for session in listed}
    assert folders == {"in the workspace": ".", "in a folder of it": "src/app",
                       "in a sibling whose name starts like it": None,
                       "in a folder that climbs out of it": None,
                       "elsewhere on the machine": None}
    assert {session["title"]: session["folder"] for session in found} == {
        "in a folder of it": "src/app", "in a folder that climbs out of it": None}
    assert details["in a folder of it"]["session"]["folder"] == "src/app"
    answers = json.dumps([listed, found, details])
    assert '"cwd"' not in answers
    assert str(tmp_path) not in answers and str(tmp_path.resolve()) not in answers


def test_a_runs_events_do_not_name_the_workspace(make_server: MakeServer, tmp_path: Path
                                                 ) -> None:
    # the `done` event's result carried the conversation with the system prompt, whose
    # environment section says "Working directory: /home/alice/…"
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("three words here\n")
    script = [Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]), Reply("read it")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=tmp_path / "work")
        started = served.start("read notes.txt")
        events = served.events(started["run_id"])
        run = served.api.get(f"/runs/{started['run_id']}").text
    done = events[-1][1]
    assert done["type"] == "done"
    roles = [message["role"] for message in done["result"]["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the rest is all there
    assert "three words here" in json.dumps(done)
    answers = json.dumps(events) + run
    assert str(tmp_path) not in answers and str(tmp_path.resolve()) not in answers
