"""The server against hostile or careless clients: odd resume ids, path tricks on the static
route, clients that hang up mid-stream or never read, approvals answered twice or too late, and
the page's token never travelling onwards in a Referer."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from serve_helpers import TOKEN, MakeServer, agent_options, serve_in_thread, serve_process

from loopwright.serve.app import ServeOptions
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply, call
from raw_provider import raw_stream


def test_hostile_resume_ids_are_refused_or_harmless(make_server: MakeServer) -> None:
    with FakeModelServer([Reply("short answer")]) as fake:
        served = make_server(fake)
        run_id = served.start()["run_id"]
        served.wait_finished(run_id)
        for bad in ["-1", "abc", "1e3", "0x10", "9" * 5000, "1; 2"]:
            response = served.api.get(f"/runs/{run_id}/events", headers={"last-event-id": bad})
            assert response.status_code == 400, bad
            assert "non-negative event number" in response.json()["error"]
        # a number past the end is a client that has seen everything: nothing more, no error
        assert served.events(run_id, last_event_id=10**30) == []
        assert served.events(run_id, after=10**30) == []


def test_the_static_route_serves_nothing_outside_its_folder(make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        for path in ["/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py",
                     "/static/%2e%2e%2f%2e%2e%2fconfig.py", "/static//etc/passwd",
                     "/static/..\\app.py"]:
            response = served.api.get(path)
            assert response.status_code == 404, (path, response.status_code)
            assert "import" not in response.text and "root:" not in response.text


def _server_loop_tasks(served_app: object, run_id: str) -> tuple[int, int]:
    """(tasks on the server's event loop, SSE clients the run counts), asked on that loop."""
    registry = served_app.app.state.registry  # type: ignore[attr-defined]
    run = registry.get(run_id)
    loop = run.handle.task.get_loop()

    async def count() -> tuple[int, int]:
        await asyncio.sleep(0)
        return len(asyncio.all_tasks()), len(run._wakers)

    return asyncio.run_coroutine_threadsafe(count(), loop).result(10)


def test_many_clients_leaving_mid_stream_leave_no_task_or_waiter(
        make_server: MakeServer) -> None:
    # strict=False: the second reply stands for a run that would go on; this one is cancelled
    with FakeModelServer([Reply("slow " * 50, chunk_size=5, delay=0.0), Reply("x", delay=30)],
                         strict=False) as fake:
        served = make_server(fake, keepalive=0.2)
        run_id = served.start(stop_when_last_client_leaves=False)["run_id"]
        served.events(run_id, stop=lambda e: e["type"] == "turn_start")
        before, _ = _server_loop_tasks(served.app, run_id)
        for _ in range(3):
            clients = [httpx.Client(base_url=served.url, timeout=10,
                                    headers={"authorization": f"Bearer {served.token}"})
                       for _ in range(20)]
            streams = [client.stream("GET", f"/runs/{run_id}/events") for client in clients]
            for stream in streams:
                response = stream.__enter__()
                next(response.iter_lines())  # the first line arrived: then hang up mid-stream
            for stream, client in zip(streams, clients, strict=True):
                stream.__exit__(None, None, None)
                client.close()
        limit = time.monotonic() + 10
        while True:
            tasks, waiters = _server_loop_tasks(served.app, run_id)
            if (tasks <= before and waiters == 0) or time.monotonic() > limit:
                break
            time.sleep(0.1)
        assert waiters == 0, "a client that hung up is still counted as watching"
        assert tasks <= before, f"{tasks - before} tasks left behind by 60 departed clients"
        assert served.api.get(f"/runs/{run_id}").json()["clients"] == 0
        served.api.post(f"/runs/{run_id}/cancel")
        served.wait_finished(run_id)


def test_an_approval_is_answered_once_only_and_never_after_its_timeout(
        make_server: MakeServer, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir).mkdir()
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf build"}, id="c1")]),
              Reply("done"),
              Reply(tool_calls=[call("bash", {"command": "rm -rf dist"}, id="c2")]),
              Reply("done again")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, workdir=workdir, approval_timeout=2.0,
                             leave_grace=30.0)  # only the timeout may deny
        run_id = served.start("clean")["run_id"]
        asked = served.events(run_id, stop=lambda e: e.get("kind") == "approval_required")
        call_id = asked[-1][1]["data"]["call_id"]
        wrong = served.api.post(f"/runs/{run_id}/approvals/not-{call_id}",
                                json={"decision": "allow"})
        assert wrong.status_code == 404
        first = served.api.post(f"/runs/{run_id}/approvals/{call_id}", json={"decision": "deny"})
        assert first.status_code == 200
        second = served.api.post(f"/runs/{run_id}/approvals/{call_id}",
                                 json={"decision": "allow"})
        assert second.status_code == 404  # the first answer stands
        served.wait_finished(run_id)

        late = served.start("clean again")["run_id"]
        asked = served.events(late, stop=lambda e: e.get("kind") == "approval_required")
        late_id = asked[-1][1]["data"]["call_id"]
        served.wait_finished(late)  # the timeout denied it
        answer = served.api.post(f"/runs/{late}/approvals/{late_id}", json={"decision": "allow"})
        assert answer.status_code == 404
    results = [e for _, e in served.events(run_id) + served.events(late)
               if e["type"] == "tool_result"]
    assert len(results) == 2 and all(r["is_error"] for r in results), results


def test_the_page_and_its_link_send_no_referer(make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        browser = httpx.Client(base_url=served.url, timeout=10)
        link = browser.get("/", params={"token": served.token})  # an old link: just the page
        assert link.status_code == 200
        page = browser.get("/")
        api = served.api.get("/health")
        browser.close()
    for response in (link, page, api):
        assert response.headers.get("referrer-policy") == "no-referrer", response.headers


def _serving_threads() -> int:
    return sum(thread.name == "loopwright-serve-test" for thread in threading.enumerate())


def test_shutdown_cancels_live_runs_and_leaves_their_sessions_resumable(
        make_server: MakeServer, tmp_path: Path) -> None:
    # the model would answer in an hour: the run ends only by being cancelled
    script = [Reply("never finished", delay=3600.0), Reply("resumed fine")]
    with FakeModelServer(script) as fake:
        options = ServeOptions(token=TOKEN, store=open_store(tmp_path / "sessions.db"),
                               agent_options=agent_options(fake, tmp_path / "work"))
        serving_before = _serving_threads()
        with serve_in_thread(options) as first:
            started = first.start("a long job")
            first.events(started["run_id"], stop=lambda e: e["type"] == "turn_start")
        # the live run did not hold the server up: its thread ended within the helper's join,
        # a hang guard (20 s) far short of the run's hour
        assert _serving_threads() == serving_before
        served = make_server(fake)  # the same store file, a new process's worth of state
        session = served.api.get(f"/sessions/{started['session_id']}").json()
        assert session["session"]["stop_reason"] == "cancelled"
        assert session["live_run"] is None  # its lease was given back
        again = served.start("", session_id=started["session_id"])
        assert served.wait_finished(again["run_id"])["stop_reason"] == "completed"
    resumed = json.dumps(fake.model_requests[-1].body["messages"])
    assert "a long job" in resumed


def test_search_and_session_ids_with_query_syntax_are_plain_text(make_server: MakeServer) -> None:
    with FakeModelServer([Reply("the otter answer")]) as fake:
        served = make_server(fake)
        started = served.start("tell me about otters")
        served.wait_finished(started["run_id"])
        for query in ['"', "otter*", "NEAR(otter", "otter OR 1=1", "-otter", "'; DROP TABLE x;--",
                      "{otter}", "otter:", "%", "\x00", "(" * 200]:
            response = served.api.get("/sessions", params={"q": query})
            assert response.status_code == 200, (query, response.text)
        for prefix in ["%", "_", "*", "' OR '1'='1", started["session_id"][:1] + "%"]:
            response = served.api.get(f"/sessions/{prefix}")
            assert response.status_code == 404, (prefix, response.text)
        assert served.api.get("/sessions").json()["sessions"][0]["id"] == started["session_id"]


EVIL = "http://evil.example"


def _cors_headers(response: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items()
            if name.lower().startswith("access-control-")}


def test_no_cors_headers_so_no_other_origin_may_read_or_preflight(
        make_server: MakeServer) -> None:
    # A browser lets a page on another origin read an answer (or send a non-simple request)
    # only if the server says so with Access-Control-Allow-*; this server never does.
    with FakeModelServer([Reply("an answer")]) as fake:
        served = make_server(fake)
        run_id = served.start()["run_id"]
        served.wait_finished(run_id)
        with_token = served.client(headers={"origin": EVIL})
        for path in ["/health", "/runs", f"/runs/{run_id}", f"/runs/{run_id}/events",
                     "/sessions", "/", "/static/app.js", "/openapi.json", "/nope"]:
            response = with_token.get(path)
            assert response.status_code in (200, 404), (path, response.status_code)
            assert _cors_headers(response) == {}, (path, response.headers)
        posted = with_token.post("/runs", json={"prompt": "from elsewhere"})
        assert posted.status_code == 201 and _cors_headers(posted) == {}

        anonymous = httpx.Client(base_url=served.url, timeout=10)
        for path in ["/runs", f"/runs/{run_id}/steer", f"/runs/{run_id}/approvals/c1",
                     "/sessions", "/"]:
            preflight = anonymous.options(path, headers={
                "origin": EVIL, "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type"})
            # no grant: not a 2xx, and nothing that names an origin, method or header
            assert not 200 <= preflight.status_code < 300, (path, preflight.status_code)
            assert _cors_headers(preflight) == {}, (path, preflight.headers)
        # even with the token (a browser never sends it on a preflight) OPTIONS grants nothing
        with_token_preflight = with_token.options("/runs", headers={
            "access-control-request-method": "POST"})
        assert not 200 <= with_token_preflight.status_code < 300
        assert _cors_headers(with_token_preflight) == {}
        anonymous.close()


def test_a_reply_with_a_lone_surrogate_or_a_c1_control_streams_escaped(
        make_server: MakeServer) -> None:
    # a provider may send `"\ud800"`: encoding its SSE frame raised inside the text listener, the
    # stream was taken as malformed, and the run failed after six attempts
    with raw_stream(rb'"lone \ud800 csi \u009b2J"') as base_url, FakeModelServer([]) as unused:
        served = make_server(unused, agent={"base_url": base_url})
        started = served.start("hi")
        events = [event for _, event in served.events(started["run_id"])]
        run = served.api.get(f"/runs/{started['run_id']}")
    assert events[-1]["type"] == "done", events[-1]
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert text == "lone \ud800 csi \x9b2J"
    assert run.status_code == 200  # was a 500: the run's output could not be encoded
    assert run.json()["output"] == text


def _resident_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) // 1024


def test_clients_that_never_read_a_long_log_do_not_each_hold_a_copy_of_it(
        tmp_path: Path) -> None:
    # A client that asked for a finished run's events from the start and then read nothing
    # was handed the whole log in one write, which the server kept buffered for it: these 8
    # clients grew the server by 115 MiB (10 clients of a 32 MB log: by 620 MiB).
    answer = "".join(f"{n:07d}" for n in range(300_000))  # 2.1 MB, one frame over a write
    with FakeModelServer([Reply(answer, chunk_size=8_000), Reply(answer, chunk_size=150_000)]
                         ) as fake, serve_process(
            "--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
            "--workdir", str(tmp_path)) as served:
        assert served.pid is not None
        run_id = served.start("long")["run_id"]
        served.wait_finished(run_id, limit=120)
        before = _resident_mib(served.pid)
        port = int(served.url.rsplit(":", 1)[1])
        stalled = []
        for _ in range(8):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", port))
            client.sendall(f"GET /runs/{run_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
            stalled.append(client)
        time.sleep(2)
        grown = _resident_mib(served.pid) - before
        for client in stalled:
            client.close()
        # a client that reads gets every frame whole, the ones cut over several writes too
        for run in (run_id, served.start("long again")["run_id"]):
            events = [event for _, event in served.events(run)]
            assert "".join(e["text"] for e in events if e["type"] == "text_delta") == answer
            assert events[-1]["type"] == "done"
    assert grown < 16, f"8 clients that never read grew the server by {grown} MiB"


def test_a_deeply_nested_body_is_a_400_not_a_server_error(make_server: MakeServer) -> None:
    # json.loads raised RecursionError, which no handler caught: a 500 in plain text
    with FakeModelServer([Reply("fine")]) as fake:
        served = make_server(fake)
        started = served.start("[" * 100_000)  # brackets inside a string are no nesting
        run = f"/runs/{started['run_id']}"
        assert served.wait_finished(started["run_id"])["stop_reason"] == "completed"
        deep = "[" * 100_000
        for path, body in [("/runs", deep), ("/runs", '{"prompt": "x", "tools": ' + deep + "}"),
                           ("/runs", '{"a":' * 100_000), (f"{run}/steer", deep),
                           (f"{run}/approvals/c1", deep)]:
            response = served.api.post(path, content=body.encode(),
                                       headers={"content-type": "application/json"})
            assert response.status_code == 400, (path, body[:40], response.text)
            assert response.json() == {"error": "the body is not valid JSON: it is nested "
                                                "too deeply"}


def test_a_body_without_a_length_is_cut_off_at_the_limit(make_server: MakeServer) -> None:
    """Held: a chunked body (no Content-Length to refuse up front) is read only up to 1 MB."""
    sent: list[int] = []

    def chunks() -> Iterator[bytes]:
        while len(sent) < 32:  # 2 MB
            sent.append(1)
            yield b" " * 65_536

    with FakeModelServer([]) as fake:
        served = make_server(fake)
        response = served.api.post("/runs", content=chunks(),
                                   headers={"content-type": "application/json"})
        assert response.status_code == 413
        assert response.json() == {"error": "the body is over 1000000 bytes"}
        assert served.api.get("/runs").json()["runs"] == []


def test_finished_runs_kept_for_replay_stay_within_a_byte_budget(
        make_server: MakeServer) -> None:
    # Every one of the last 200 finished runs kept its whole event log in memory, however
    # large: runs with long outputs grew the server without bound until then
    big = "z" * 200_000  # each run's log is several times this (deltas, the model call record)
    script = [Reply(big, chunk_size=5_000), Reply(big, chunk_size=5_000, delay=3.0),
              Reply(big, chunk_size=5_000), Reply(big, chunk_size=5_000)]
    with FakeModelServer(script) as fake:
        served = make_server(fake, keep_finished_bytes=600_000)
        started = served.start("one")
        first = started["run_id"]
        served.wait_finished(first)
        live = served.start("two, slowly")["run_id"]  # live: kept whatever its size
        third = served.start("three")["run_id"]
        served.wait_finished(third)
        assert served.api.get(f"/runs/{first}").status_code == 404  # over the budget: dropped
        assert served.api.get(f"/runs/{third}").status_code == 200
        assert served.api.get(f"/runs/{live}").json()["finished"] is False
        served.wait_finished(live)
        fourth = served.start("four")["run_id"]
        served.wait_finished(fourth)
        kept = {run["id"] for run in served.api.get("/runs").json()["runs"]}
        assert kept == {fourth}  # the newest finished run stays, even alone over the budget
        text = "".join(e["text"] for _, e in served.events(fourth) if e["type"] == "text_delta")
        assert text == big
        stored = served.api.get(f"/sessions/{started['session_id']}").json()
        assert stored["messages"][-1]["content"] == big  # a dropped run stays in the store
