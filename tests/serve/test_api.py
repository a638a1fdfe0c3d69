"""The HTTP API against a real server and the fake model server: runs, events, steer, cancel,
sessions, health, errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from serve_helpers import MakeServer, sse_messages

from loopwright.events import event_from_dict, event_to_dict
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call


def test_a_run_streams_its_events_and_they_are_the_json_of_run_json(
        make_server: MakeServer, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("list_dir", {"path": "."})]),
              Reply("the listing is short", reasoning="look first")]
    with FakeModelServer(script) as fake:
        served = make_server(fake)
        started = served.start("list the files")
        events = served.events(started["run_id"])
    ids = [event_id for event_id, _ in events]
    assert ids == list(range(1, len(events) + 1))  # one id per event, in order, no gaps
    data = [event for _, event in events]
    for event in data:  # every one is an event's JSON form, whole
        assert event_to_dict(event_from_dict(event)) == event
    assert data[-1]["type"] == "done" and data[-1]["result"]["stop_reason"] == "completed"
    assert data[-1]["result"]["session_id"] == started["session_id"]

    with FakeModelServer(script) as fake:  # the same script through `loopwright run --json`
        workdir = tmp_path / "work"
        cli = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "--json", "list the files",
             "--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
             "--workdir", str(workdir)],
            capture_output=True, text=True, timeout=120, check=False)
    assert cli.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in cli.stdout.splitlines()]

    def shape(events: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return [(e["type"], e.get("kind"), e.get("text"), e.get("name")) for e in events
                if e["type"] != "status" or e.get("kind") != "session_id"]

    assert shape(data) == shape(lines)


def test_a_client_that_reconnects_with_last_event_id_misses_nothing(
        make_server: MakeServer) -> None:
    text = "".join(f"word{n} " for n in range(200))
    with FakeModelServer([Reply(text, chunk_size=3)]) as fake:
        served = make_server(fake)
        run_id = served.start()["run_id"]
        first = served.events(run_id, stop=lambda e: e["type"] == "text_delta"
                              and "word20" in e["text"])
        cut = first[-1][0]
        served.wait_finished(run_id)  # the run went on while nobody watched
        rest = served.events(run_id, last_event_id=cut)
        again = served.events(run_id, after=cut)  # ?after=N for clients that cannot set headers
        whole = served.events(run_id)
    assert rest == again
    assert [i for i, _ in first + rest] == list(range(1, len(whole) + 1))
    assert first + rest == whole
    streamed = "".join(e["text"] for _, e in whole if e["type"] == "text_delta")
    assert streamed == text
    assert whole[-1][1]["type"] == "done"


def test_reconnecting_again_and_again_while_the_run_is_live_misses_nothing(
        make_server: MakeServer) -> None:
    script = [Reply(tool_calls=[call("list_dir", {"path": "."})]),
              Reply(tool_calls=[call("list_dir", {"path": "."})], delay=1.0),
              Reply("".join(f"tail{n} " for n in range(80)), chunk_size=5, delay=2.0)]
    with FakeModelServer(script) as fake:
        served = make_server(fake, leave_grace=30.0)
        run_id = served.start("look twice")["run_id"]
        seen: list[tuple[int, dict[str, object]]] = []
        live_reconnects = 0
        while not seen or seen[-1][1]["type"] != "done":
            count = 0

            def three_more(_: dict[str, object]) -> bool:
                nonlocal count
                count += 1
                return count == 3  # then hang up, as a flaky network would

            live_reconnects += not served.api.get(f"/runs/{run_id}").json()["finished"]
            seen += served.events(run_id, last_event_id=seen[-1][0] if seen else None,
                                  stop=three_more)
        whole = served.events(run_id)
    # the first ones happen while the replies are still delayed (how many more do depends
    # on how fast this machine reads the final burst)
    assert live_reconnects >= 2
    assert seen == whole
    assert [event_id for event_id, _ in seen] == list(range(1, len(whole) + 1))


def test_a_run_stops_only_when_its_last_client_leaves(make_server: MakeServer) -> None:
    with FakeModelServer([Reply("slow but finished", delay=3.0)]) as fake:
        served = make_server(fake, leave_grace=1.5)
        run_id = served.start(stop_when_last_client_leaves=True)["run_id"]
        stayed: list[tuple[int, dict[str, object]]] = []
        staying = threading.Thread(target=lambda: stayed.extend(served.events(run_id)))
        staying.start()
        deadline = time.monotonic() + 60  # a hang guard only
        while served.api.get(f"/runs/{run_id}").json()["clients"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        second = served.client()  # a second client, on its own connection, comes and goes
        with second.stream("GET", f"/runs/{run_id}/events") as response:
            next(response.iter_lines())
        staying.join(30)
        shown = served.api.get(f"/runs/{run_id}").json()
    assert stayed[-1][1]["type"] == "done"
    assert shown["stop_reason"] == "completed"  # one client leaving did not stop it


def test_a_disconnected_client_does_not_stop_the_run_unless_asked(
        make_server: MakeServer) -> None:
    with FakeModelServer([Reply("slow", delay=1.0), Reply("slow too", delay=30.0)]) as fake:
        served = make_server(fake, leave_grace=0.3)
        kept = served.start()["run_id"]
        served.events(kept, stop=lambda e: e["type"] == "turn_start")  # then hang up
        assert served.wait_finished(kept)["stop_reason"] == "completed"

        stopped = served.start("again", stop_when_last_client_leaves=True)["run_id"]
        served.events(stopped, stop=lambda e: e["type"] == "turn_start")
        assert served.wait_finished(stopped, limit=10)["stop_reason"] == "cancelled"


def test_steer_reaches_the_next_turn_and_cancel_stops_the_run(make_server: MakeServer,
                                                              tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("hello\n")
    script = [Reply(tool_calls=[call("read_file", {"path": "notes.txt"})], delay=1.0),
              Reply("read it"),
              # the run to cancel: busy, not failing on a used-up script (under load that
              # raced the cancel); the cancel may come before it is even asked for
              Reply("still thinking", delay=30.0)]
    with FakeModelServer(script, strict=False) as fake:
        served = make_server(fake)
        run_id = served.start("read notes")["run_id"]
        steered = served.api.post(f"/runs/{run_id}/steer", json={"text": "also say hi"})
        assert steered.status_code == 202, steered.text
        served.wait_finished(run_id)
        second = json.dumps(fake.model_requests[1].body["messages"])
        assert "also say hi" in second
        assert served.api.post(f"/runs/{run_id}/steer", json={"text": "x"}).status_code == 409

        slow = served.start("wait")["run_id"]
        served.events(slow, stop=lambda e: e["type"] == "turn_start")
        assert served.api.post(f"/runs/{slow}/cancel").status_code == 202
        events = served.events(slow)
        assert events[-1][1]["type"] == "cancelled"
        assert served.api.post(f"/runs/{slow}/cancel").status_code == 409


def test_many_runs_at_once_in_one_process(make_server: MakeServer) -> None:
    runs = 12
    everyone_asked = asyncio.Event()  # of the fake server's loop, where the handler runs
    asked: list[RecordedRequest] = []

    async def answer_when_all_have_asked(request: RecordedRequest) -> Reply:
        # no run is answered until every run is waiting for its model: they overlap, not queue
        asked.append(request)
        if len(asked) == runs:
            everyone_asked.set()
        try:
            # a hang guard only, and below the client's stream idle timeout (120 s), so no
            # retried request is counted as another run asking
            await asyncio.wait_for(everyone_asked.wait(), 60)
        except TimeoutError:
            everyone_asked.set()  # the rest need not wait out the guard too
            return Reply(f"answered alone, with {len(asked)} of {runs} runs asking")
        return Reply("done")

    with FakeModelServer(handler=answer_when_all_have_asked) as fake:
        served = make_server(fake)
        run_ids = [served.start(f"task {n}")["run_id"] for n in range(runs)]
        results: dict[str, tuple[str, str]] = {}

        def watch(run_id: str) -> None:
            result = served.events(run_id)[-1][1]["result"]
            results[run_id] = (result["stop_reason"], result["output"])

        threads = [threading.Thread(target=watch, args=(r,)) for r in run_ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
    assert results == {run_id: ("completed", "done") for run_id in run_ids}
    listed = served.api.get("/runs").json()["runs"]
    assert {run["id"] for run in listed} >= set(run_ids)


def test_sessions_are_listed_searched_shown_and_continued(make_server: MakeServer) -> None:
    script = [Reply(tool_calls=[call("list_dir", {"path": "."})]),
              Reply("the aardvark answer"), Reply("second answer")]
    with FakeModelServer(script) as fake:
        served = make_server(fake)
        first = served.start("tell me about aardvarks")
        served.wait_finished(first["run_id"])
        session_id = first["session_id"]

        listed = served.api.get("/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [session_id]
        assert listed[0]["title"] and listed[0]["runs"] == 1
        found = served.api.get("/sessions", params={"q": "aardvark"}).json()["sessions"]
        assert [s["id"] for s in found] == [session_id] and "aardvark" in found[0]["snippet"]
        assert served.api.get("/sessions", params={"q": "zebra"}).json()["sessions"] == []

        detail = served.api.get(f"/sessions/{session_id[:8]}").json()
        assert detail["session"]["id"] == session_id
        assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "tool",
                                                           "assistant"]
        assert [t["turn"] for t in detail["turns"]] == [1, 2]
        assert any(e["type"] == "tool_call" and e["name"] == "list_dir"
                   for e in detail["events"])
        assert [e["is_error"] for e in detail["events"] if e["type"] == "tool_result"] == [False]
        assert detail["live_run"] is None
        assert served.api.get("/sessions/ffffffff").status_code == 404

        again = served.start("and more?", session_id=session_id[:8])
        assert again["session_id"] == session_id
        served.wait_finished(again["run_id"])
        sent = json.dumps(fake.model_requests[2].body["messages"])
        assert "tell me about aardvarks" in sent and "and more?" in sent
        assert served.api.get(f"/sessions/{session_id}").json()["session"]["runs"] == 2


def test_health_and_bad_requests_answer_one_line_errors(make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        health = served.api.get("/health").json()
        assert health["status"] == "ok" and health["store"] is True
        cases = [
            ({"prompt": "x", "colour": "red"}, 400, "unknown field 'colour'"),
            ({"prompt": ""}, 400, "prompt is missing or empty"),
            ({"prompt": 3}, 400, "prompt must be a string"),
            ({"prompt": "x", "tools": ["rm_everything"]}, 400, "rm_everything not offered"),
            ({"prompt": "x", "output_type": "Report"}, 400, "output_type"),
            ({"prompt": "x", "session_id": "nope"}, 404, "no session matches"),
        ]
        for body, status, words in cases:
            response = served.api.post("/runs", json=body)
            assert response.status_code == status, (body, response.text)
            assert words in response.json()["error"]
        raw = served.api.post("/runs", content=b"{not json",
                              headers={"content-type": "application/json"})
        assert raw.status_code == 400 and "not valid JSON" in raw.json()["error"]
        huge = served.api.post("/runs", content=b" " * 1_000_001)
        assert huge.status_code == 413
        assert served.api.get("/runs/nope").status_code == 404
        assert served.api.get("/runs/nope/events").status_code == 404
        assert served.api.post("/runs/nope/cancel").status_code == 404
        run_id = served.start()["run_id"]
        bad_resume = served.api.get(f"/runs/{run_id}/events", headers={"last-event-id": "x"})
        assert bad_resume.status_code == 400


def test_sse_lines_parse_as_the_spec_says() -> None:
    lines = iter(["retry: 1000", "", ": keep-alive", "", "id: 1", 'data: {"a": 1}', ""])
    assert list(sse_messages(lines)) == [(1, {"a": 1})]


def test_run_ids_are_full_128_bit_capabilities(make_server: MakeServer) -> None:
    # a run id is all a client needs to watch, steer, cancel or approve a run: 48 bits were
    # guessable; a whole uuid4 (122 random bits) is not
    with FakeModelServer([Reply("done")], repeat=True) as fake:
        served = make_server(fake)
        ids = [served.start(f"task {n}")["run_id"] for n in range(2)]
        listed = {run["id"] for run in served.api.get("/runs").json()["runs"]}
    assert ids[0] != ids[1]
    for run_id in ids:
        assert len(run_id) == 32 and int(run_id, 16) >= 0
    assert listed == set(ids)
