"""FakeModelServer over real HTTP: lifecycle, scripting, recording, faults, probes, subprocess."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, call, fake_server

from ._sse import chat_chunks, named_events

# One client for the module: httpx.post() builds a new client and TLS context on every call.
HTTP = httpx.Client(timeout=10)

CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
STREAM_BODY = {**CHAT_BODY, "stream": True}


def raw_exchange(port: int, *requests: bytes) -> bytes:
    """Send raw requests on one socket and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        for request in requests:
            sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def raw_post(path: str, body: dict[str, Any], *, close: bool = False) -> bytes:
    payload = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(payload)}\r\n"
    head += "Connection: close\r\n" if close else ""
    return head.encode() + b"\r\n" + payload


# -- lifecycle and addresses --------------------------------------------------------------------


def test_urls_point_at_a_listening_local_port() -> None:
    with FakeModelServer() as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.base_url == server.url + "/v1"
        assert server.port > 0


def test_stopped_server_has_no_address_and_refuses_connections() -> None:
    server = FakeModelServer().start()
    port = server.port
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with pytest.raises(httpx.ConnectError):
        HTTP.get(f"http://127.0.0.1:{port}/v1/models")


def test_each_stop_ends_the_servers_thread() -> None:
    # stop() joins the thread with a timeout: a thread that outlived it would still be counted
    threads_before = threading.active_count()
    for _ in range(40):
        with FakeModelServer([Reply("x")]) as server:
            HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
        assert threading.active_count() == threads_before


async def test_async_context_manager_serves_an_async_client() -> None:
    async with FakeModelServer([Reply("from async")]) as server, httpx.AsyncClient() as client:
        response = await client.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.json()["choices"][0]["message"]["content"] == "from async"


async def test_concurrent_async_requests_each_get_one_reply() -> None:
    replies = [Reply(f"reply {i}") for i in range(50)]
    with FakeModelServer(replies) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            responses = await asyncio.gather(
                *(client.post("/chat/completions", json=STREAM_BODY) for _ in range(50))
            )
    texts = set()
    for response in responses:
        deltas = [c["choices"][0]["delta"] for c in chat_chunks(response.text)]
        texts.add("".join(d.get("content") or "" for d in deltas))
    assert texts == {f"reply {i}" for i in range(50)}


def test_fake_server_helper_runs_a_started_server() -> None:
    with fake_server(Reply("helper"), model="my-model") as server:
        data = HTTP.get(server.base_url + "/models").json()
        assert data["data"][0]["id"] == "my-model"
        assert server.remaining == 1


def test_stop_ends_a_stalled_stream() -> None:
    arrived = threading.Event()

    def stall_for_an_hour(request: RecordedRequest) -> Fault:
        arrived.set()
        return Fault.stall(Reply("never finishes"), after_chunks=1, seconds=3600)

    threads_before = threading.active_count()
    server = FakeModelServer(handler=stall_for_an_hour)
    server.start()
    errors: list[BaseException] = []

    def consume() -> None:
        try:  # no read timeout: only the server closing the stream ends the read
            with HTTP.stream("POST", server.base_url + "/chat/completions", json=STREAM_BODY,
                             timeout=httpx.Timeout(10, read=None)) as r:
                r.read()
        except httpx.HTTPError as exc:
            errors.append(exc)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    assert arrived.wait(60)
    server.stop()
    reader.join(60)  # a hang guard only: the stall holds the stream for an hour
    assert not reader.is_alive()
    assert threading.active_count() == threads_before  # the server's thread ended too
    assert [type(error) for error in errors] == [httpx.RemoteProtocolError]


# -- HTTP behaviour -----------------------------------------------------------------------------


def test_keep_alive_serves_several_requests_on_one_connection() -> None:
    with FakeModelServer([Reply("one"), Reply("two", chunk_size=1)]) as server:
        received = raw_exchange(
            server.port,
            raw_post("/v1/chat/completions", CHAT_BODY),
            raw_post("/v1/chat/completions", STREAM_BODY, close=True),
        )
    first, second = received.split(b"HTTP/1.1 200 OK\r\n")[1:]
    assert b"connection: keep-alive" in first
    assert b'"content":"one"' in first
    assert b"transfer-encoding: chunked" in second
    assert second.endswith(b"0\r\n\r\n")
    assert b"connection: close" in second


def test_httpx_client_reuses_its_connection() -> None:
    with FakeModelServer([Reply("a"), Reply("b"), Reply("c")]) as server:
        with httpx.Client(base_url=server.base_url) as client:
            streams = set()
            for _ in range(3):
                response = client.post("/chat/completions", json=CHAT_BODY)
                streams.add(id(response.extensions["network_stream"]))
        assert len(streams) == 1


def test_json_responses_carry_content_length() -> None:
    with FakeModelServer([Reply("sized")]) as server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert int(response.headers["content-length"]) == len(response.content)


def test_paths_work_with_and_without_v1_prefix() -> None:
    with FakeModelServer([Reply("root"), Reply("prefixed")]) as server:
        root = HTTP.post(server.url + "/chat/completions", json=CHAT_BODY)
        prefixed = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert root.json()["choices"][0]["message"]["content"] == "root"
    assert prefixed.json()["choices"][0]["message"]["content"] == "prefixed"


def test_unknown_route_is_404_and_wrong_method_is_405() -> None:
    with FakeModelServer([Reply("unused")], strict=False) as server:  # never asked, on purpose
        assert HTTP.get(server.url + "/nope").status_code == 404
        assert HTTP.get(server.base_url + "/chat/completions").status_code == 405
        assert server.remaining == 1


def test_invalid_json_body_is_400_and_does_not_consume_the_script() -> None:
    with FakeModelServer([Reply("kept")]) as server:
        bad = HTTP.post(server.base_url + "/messages", content=b"{not json")
        good = HTTP.post(server.base_url + "/messages", json=CHAT_BODY)
    assert bad.status_code == 400
    assert bad.json()["type"] == "error"
    assert good.json()["content"][0]["text"] == "kept"


# -- scripting and recording --------------------------------------------------------------------


def test_replies_are_served_in_order_then_the_exhausted_script_fails_loudly() -> None:
    with FakeModelServer([Reply("first")]) as server:
        first = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
        HTTP.get(server.base_url + "/models")  # does not consume a reply
        exhausted = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert first.json()["choices"][0]["message"]["content"] == "first"
    assert exhausted.status_code == 400
    message = exhausted.json()["error"]["message"]
    assert message == "FakeModelServer: no scripted reply left for request #2"


def test_add_appends_replies_while_serving() -> None:
    with FakeModelServer() as server:
        server.add(Reply("late"), Reply("later"))
        assert server.remaining == 2
        response = HTTP.post(server.base_url + "/responses", json={"model": "m", "input": []})
        assert server.remaining == 1
    assert response.json()["output"][0]["content"][0]["text"] == "late"


def test_repeat_loops_the_script() -> None:
    with FakeModelServer([Reply("a"), Reply("b")], repeat=True) as server:
        texts = [
            HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY).json()["choices"][0][
                "message"
            ]["content"]
            for _ in range(5)
        ]
    assert texts == ["a", "b", "a", "b", "a"]


def test_requests_are_recorded_with_lowercased_headers_and_parsed_bodies() -> None:
    with FakeModelServer([Reply("x"), Reply("y")], context_window=4096) as server:
        HTTP.post(
            server.base_url + "/messages?beta=true",
            json={"model": "claude", "messages": [], "stream": True},
            headers={"X-Api-Key": "secret", "Anthropic-Version": "2023-06-01"},
        )
        HTTP.get(server.url + "/api/ps")
        HTTP.post(server.url + "/chat/completions", json=CHAT_BODY)
        recorded = server.requests
        model_calls = server.model_requests

    assert [r.format for r in recorded] == ["anthropic_messages", None, "chat_completions"]
    first = recorded[0]
    assert first.method == "POST" and first.path == "/v1/messages" and first.query == "beta=true"
    assert first.headers["x-api-key"] == "secret"
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert first.body["model"] == "claude" and first.stream and first.model == "claude"
    assert recorded[1].method == "GET" and recorded[1].body is None
    assert [r.format for r in model_calls] == ["anthropic_messages", "chat_completions"]


def test_handler_chooses_each_reply_from_the_request() -> None:
    def echo_last_message(request: RecordedRequest) -> Reply:
        return Reply("echo: " + request.body["messages"][-1]["content"])

    with FakeModelServer(handler=echo_last_message) as server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.json()["choices"][0]["message"]["content"] == "echo: hi"


def test_async_handler_is_awaited_on_the_server_loop() -> None:
    async def slow_reply(request: RecordedRequest) -> Reply:
        await asyncio.sleep(0.01)
        return Reply(tool_calls=[call("add", {"a": 1})])

    with FakeModelServer(handler=slow_reply) as server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.json()["choices"][0]["finish_reason"] == "tool_calls"


def test_handler_error_becomes_a_non_retryable_400(caplog: pytest.LogCaptureFixture) -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise KeyError("oops")

    with FakeModelServer(handler=broken) as server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.status_code == 400
    assert "handler raised KeyError" in response.json()["error"]["message"]


def test_replies_and_handler_together_are_rejected() -> None:
    with pytest.raises(ValueError, match="either"):
        FakeModelServer([Reply("x")], handler=lambda request: Reply("y"))


# -- faults -------------------------------------------------------------------------------------


def test_rate_limit_sends_429_with_retry_headers() -> None:
    with FakeModelServer([Fault.rate_limit(retry_after=2, retry_after_ms=10)]) as server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.headers["retry-after-ms"] == "10"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_rate_limit_without_hints_sends_no_retry_headers() -> None:
    with FakeModelServer([Fault.rate_limit()]) as server:
        response = HTTP.post(server.base_url + "/messages", json=CHAT_BODY)
    assert response.status_code == 429
    assert "retry-after" not in response.headers
    assert response.json()["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize("code", [400, 401, 500, 502, 503])
def test_status_fault_sends_the_code_with_a_format_error_body(code: int) -> None:
    with FakeModelServer([Fault.status(code), Fault.status(code)]) as server:
        openai = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
        anthropic = HTTP.post(server.base_url + "/messages", json=CHAT_BODY)
    assert openai.status_code == anthropic.status_code == code
    assert set(openai.json()["error"]) == {"message", "type", "param", "code"}
    assert anthropic.json()["type"] == "error"
    assert set(anthropic.json()["error"]) == {"type", "message"}


def test_status_fault_with_custom_body_and_headers() -> None:
    fault = Fault.status(503, body="upstream down", headers={"x-trace": "t1"})
    with FakeModelServer([fault]) as server:
        response = HTTP.post(server.base_url + "/responses", json=CHAT_BODY)
    assert response.status_code == 503
    assert response.text == "upstream down"
    assert response.headers["x-trace"] == "t1"


def test_overloaded_is_529_with_anthropic_exact_body() -> None:
    with FakeModelServer([Fault.overloaded(), Fault.overloaded()]) as server:
        anthropic = HTTP.post(server.base_url + "/messages", json=CHAT_BODY)
        openai = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert anthropic.status_code == openai.status_code == 529
    assert anthropic.content == (
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    )
    assert openai.json()["error"]["type"] == "overloaded_error"


def test_cut_stream_sends_some_events_then_drops_the_connection() -> None:
    fault = Fault.cut_stream(Reply("a long answer that is cut", chunk_size=3), after_chunks=3)
    received: list[str] = []
    with (
        FakeModelServer([fault]) as server,
        pytest.raises(httpx.RemoteProtocolError),
        HTTP.stream("POST", server.base_url + "/chat/completions", json=STREAM_BODY) as r,
    ):
        received.extend(line for line in r.iter_lines() if line)
    assert len(received) == 3
    assert all(line.startswith("data: {") for line in received)


def test_cut_stream_leaves_the_chunked_body_unterminated() -> None:
    with FakeModelServer([Fault.cut_stream(Reply("hello world"), after_chunks=2)]) as server:
        received = raw_exchange(
            server.port, raw_post("/v1/messages", {**CHAT_BODY, "stream": True})
        )
    assert received.startswith(b"HTTP/1.1 200 OK")
    assert b"event: message_start" in received
    assert b"message_stop" not in received
    assert not received.endswith(b"0\r\n\r\n")


def test_cut_stream_on_a_non_streaming_request_closes_without_response() -> None:
    with FakeModelServer([Fault.cut_stream(), Fault.disconnect()]) as server:
        for _ in range(2):
            with pytest.raises(httpx.RemoteProtocolError):
                HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)


def test_stall_goes_idle_mid_stream_then_finishes() -> None:
    fault = Fault.stall(Reply("stalled reply"), after_chunks=2, seconds=0.3)
    arrivals: list[tuple[float, str]] = []
    with FakeModelServer([fault]) as server:
        body = {"model": "m", "input": [], "stream": True}
        with HTTP.stream("POST", server.base_url + "/responses", json=body) as r:
            arrivals.extend((time.perf_counter(), line) for line in r.iter_lines() if line)
    gaps = [later[0] - earlier[0] for earlier, later in itertools.pairwise(arrivals)]
    assert max(gaps) >= 0.25
    assert gaps.index(max(gaps)) == 3  # after 2 events = 4 lines (event + data each)
    assert arrivals[-1][1].startswith('data: {"type":"response.completed"')


def test_stall_trips_a_client_read_timeout() -> None:
    fault = Fault.stall(Reply("slow"), after_chunks=1, seconds=2)
    with FakeModelServer([fault]) as server:
        timeout = httpx.Timeout(5, read=0.2)
        with (
            pytest.raises(httpx.ReadTimeout),
            HTTP.stream(
                "POST", server.base_url + "/messages", json=STREAM_BODY, timeout=timeout
            ) as r,
        ):
            r.read()


def test_reply_delay_holds_the_answer_back() -> None:
    with FakeModelServer([Reply("late", delay=0.2)]) as server:
        started = time.perf_counter()
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert time.perf_counter() - started >= 0.2
    assert response.json()["choices"][0]["message"]["content"] == "late"


def test_empty_fault_is_an_empty_reply() -> None:
    with FakeModelServer([Fault.empty()]) as server:
        response = HTTP.post(server.base_url + "/messages", json=STREAM_BODY)
    names = [name for name, _ in named_events(response.text)]
    assert "content_block_start" not in names and names[-1] == "message_stop"


# -- model listing and context-window probes ----------------------------------------------------

PROBES = ["/api/ps", "/props", "/api/v0/models"]


def test_probes_are_404_without_a_context_window() -> None:
    with FakeModelServer() as server:
        assert [HTTP.get(server.url + p).status_code for p in PROBES] == [404, 404, 404]
        entry = HTTP.get(server.base_url + "/models").json()["data"][0]
    assert entry["id"] == "fake-model"
    assert "context_length" not in entry and "max_model_len" not in entry


def test_default_flavor_answers_every_probe_and_lists_the_window() -> None:
    with FakeModelServer(context_window=32768, model="qwen") as server:
        ollama, llamacpp, lmstudio = (HTTP.get(server.url + p).json() for p in PROBES)
        entry = HTTP.get(server.base_url + "/models").json()["data"][0]
    assert ollama["models"][0] == {"name": "qwen", "model": "qwen", "context_length": 32768}
    assert llamacpp["default_generation_settings"]["n_ctx"] == 32768
    assert lmstudio["data"][0]["loaded_context_length"] == 32768
    assert entry["max_model_len"] == entry["context_length"] == 32768


@pytest.mark.parametrize(
    ("flavor", "answering"),
    [("ollama", "/api/ps"), ("llamacpp", "/props"), ("lmstudio", "/api/v0/models"), ("vllm", None)],
)
def test_a_flavor_answers_only_its_own_probe(flavor: Any, answering: str | None) -> None:
    with FakeModelServer(context_window=8192, flavor=flavor) as server:
        statuses = {p: HTTP.get(server.url + p).status_code for p in PROBES}
        entry = HTTP.get(server.base_url + "/models").json()["data"][0]
    assert statuses == {p: 200 if p == answering else 404 for p in PROBES}
    assert ("max_model_len" in entry) == (flavor == "vllm")
    assert "context_length" not in entry


def test_lmstudio_reports_loaded_and_max_context_separately() -> None:
    with FakeModelServer(context_window=4096, max_context_window=131072, flavor="lmstudio") as s:
        entry = HTTP.get(s.url + "/api/v0/models").json()["data"][0]
    assert entry["loaded_context_length"] == 4096
    assert entry["max_context_length"] == 131072


# -- subprocess entry point ---------------------------------------------------------------------


def test_subprocess_serves_a_json_script(tmp_path: Path) -> None:
    script = [
        {"fault": "rate_limit", "retry_after_ms": 10},
        {"text": "", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    command = [sys.executable, "-m", "loopwright.testing.server", "--script", str(path)]
    process = subprocess.Popen(
        [*command, "--context-window", "2048"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline().split()
        assert ready[0] == "READY" and ready[1].startswith("http://127.0.0.1:")
        base_url = ready[1]
        assert base_url.endswith("/v1")
        limited = HTTP.post(base_url + "/chat/completions", json=CHAT_BODY)
        called = HTTP.post(base_url + "/chat/completions", json=CHAT_BODY)
        probe = HTTP.get(base_url.removesuffix("/v1") + "/props")
    finally:
        process.terminate()
        exit_code = process.wait(5)
    assert limited.status_code == 429 and limited.headers["retry-after-ms"] == "10"
    arguments = called.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"a": 1, "b": 2}
    assert probe.json()["default_generation_settings"]["n_ctx"] == 2048
    assert exit_code == 0


def test_handler_returning_something_else_is_a_clear_400() -> None:
    with FakeModelServer(handler=lambda request: None) as server:  # type: ignore[arg-type,return-value]
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.status_code == 400
    assert "expected a Reply or a Fault" in response.json()["error"]["message"]


def test_reply_model_overrides_the_requested_model() -> None:
    with FakeModelServer([Reply("x", model="gpt-4o-2024-08-06")]) as server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.json()["model"] == "gpt-4o-2024-08-06"


def test_a_stopped_server_can_start_again() -> None:
    server = FakeModelServer([Reply("one"), Reply("two")])
    with server:
        HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    with server:
        response = HTTP.post(server.base_url + "/chat/completions", json=CHAT_BODY)
    assert response.json()["choices"][0]["message"]["content"] == "two"
