"""Credentials written into a base URL (`http://user:secret@host/v1`, `?api_key=secret`) reach
the server but nothing a run shows or records: events, the result, a session's stored rows and
errors name the URL with them replaced by `***`."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent, event_to_json
from loopwright.testing import FakeModelServer, Fault, Reply

FAST = RetryPolicy(base_delay=0.01, jitter=0, attempts=2)

# (how the URL carries its credentials, the URL made from the server's base URL, what it shows)
FORMS = {
    "user-info": (lambda url: url.replace("http://", "http://user:secret@"),
                  lambda url: url.replace("http://", "http://***@")),
    "api_key": (lambda url: url + "?api_key=secret", lambda url: url + "?api_key=***"),
    "key": (lambda url: url + "?key=secret&x=1", lambda url: url + "?key=***&x=1"),
}


def stored_text(db: Path) -> str:
    """Every row of every table of the session store, as one text."""
    connection = sqlite3.connect(db)
    try:
        return "\n".join(connection.iterdump())
    finally:
        connection.close()


def everything_shown(events: list[Event], result: object) -> str:
    return "\n".join([*(event_to_json(e) for e in events), repr(result)])


@pytest.mark.parametrize("form", FORMS)
async def test_a_run_sends_the_credentials_and_shows_and_stores_none(
        form: str, tmp_path: Path) -> None:
    with_credentials, shown = FORMS[form]
    events: list[Event] = []
    with FakeModelServer([Reply("done")]) as server:
        agent = Agent("m", base_url=with_credentials(server.base_url), api_key="k",
                      store=tmp_path / "s.db", callbacks=[events.append], retry=FAST)
        result = await agent.run("go")
        sent, base_url = server.model_requests[0], server.base_url
    assert result.output == "done"
    assert sent.path == "/v1/chat/completions"
    if form == "user-info":
        assert sent.headers["authorization"].startswith("Basic ")  # httpx sends the URL's user
    else:
        assert "secret" in sent.query
    seen = everything_shown(events, result)
    assert "secret" not in seen
    assert shown(base_url) in seen  # the model_call record names the redacted URL
    assert "secret" not in stored_text(tmp_path / "s.db")


@pytest.mark.parametrize("form", FORMS)
async def test_a_server_error_names_the_redacted_url(form: str) -> None:
    with_credentials, shown = FORMS[form]
    events: list[Event] = []
    with FakeModelServer([Fault.status(500), Fault.status(500)]) as server:
        agent = Agent("m", base_url=with_credentials(server.base_url), api_key="k",
                      callbacks=[events.append], retry=FAST)
        result = await agent.run("go", raise_on_error=False)
        base_url = server.base_url
    assert result.stop_reason == "error" and result.error is not None
    assert "HTTP 500" in result.error and shown(base_url) in result.error
    assert "secret" not in everything_shown(events, result)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("form", FORMS)
async def test_a_refused_connection_names_the_redacted_url(form: str) -> None:
    with_credentials, shown = FORMS[form]
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    events: list[Event] = []
    agent = Agent("m", base_url=with_credentials(base_url), api_key="k",
                  callbacks=[events.append], retry=FAST)
    result = await agent.run("go", raise_on_error=False)
    assert result.stop_reason == "error" and result.error is not None
    assert "connection failed" in result.error and shown(base_url) in result.error
    assert "secret" not in everything_shown(events, result)


def test_a_url_without_credentials_is_shown_as_it_is() -> None:
    from loopwright.endpoints.base import Endpoint

    for url in ("http://127.0.0.1:9/v1", "https://api.example.com/v1?region=eu&keyword=x",
                "http://host:1/v1?monkey=1"):
        assert Endpoint(base_url=url).shown_url == url


async def test_a_key_in_the_query_of_a_url_without_its_v1_still_goes_with_each_request() -> None:
    with FakeModelServer([Reply("done")]) as server:
        agent = Agent("m", base_url=server.url + "/?api_key=secret", api_key="k", retry=FAST)
        result = await agent.run("go")
        sent = server.model_requests[0]
    assert result.output == "done"
    assert (sent.path, sent.query) == ("/v1/chat/completions", "api_key=secret")


async def test_a_dead_embeddings_endpoint_is_named_without_its_credentials(
        tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    events: list[Event] = []
    with FakeModelServer([Reply("ok")] * 2) as server:
        async with Agent("m", base_url=server.base_url, api_key="k", store=store) as agent:
            await agent.run("How do I stop the car engine noise")
        async with Agent("m", base_url=server.base_url, api_key="k", store=store, recall=True,
                         embeddings_url=f"http://user:secret@127.0.0.1:{closed_port()}/v1"
                                        "?key=secret",
                         callbacks=[events.append]) as agent:
            result = await agent.run("engine trouble")
    assert result.stop_reason == "completed"
    failed = next(e for e in events if isinstance(e, StatusEvent) and e.kind == "recall")
    assert "embeddings endpoint http://***@127.0.0.1:" in failed.data["error"]
    assert "/v1/embeddings?key=***: ConnectError" in failed.data["error"]
    assert "secret" not in everything_shown(events, result)
    assert "secret" not in stored_text(store)
