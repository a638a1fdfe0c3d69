"""The page's logins over HTTP (serve/logins.py): the server's token is traded for a login
token; logging out ends that one login — its token is refused and its event streams end — and
nothing else: not the server's token, not another login, not their streams."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from serve_helpers import TOKEN, MakeServer, Served

from loopwright.serve.logins import MOST_LOGINS
from loopwright.testing import FakeModelServer

HANG_GUARD = 60.0


@pytest.fixture
def served(make_server: MakeServer) -> Iterator[Served]:
    with FakeModelServer([]) as fake:
        yield make_server(fake)


def log_in(served: Served) -> str:
    answer = served.api.post("/login")
    assert answer.status_code == 201, answer.text
    assert answer.headers["cache-control"] == "no-store"
    token: str = answer.json()["token"]
    return token


def health(served: Served, token: str) -> int:
    return served.client(token=token).get("/health").status_code


class Following:
    """`GET /runs/news` read on a thread until the server ends it."""

    def __init__(self, served: Served, token: str) -> None:
        self.ended = threading.Event()
        self.status: int | None = None
        self._response: httpx.Response | None = None
        self._client = served.client(token=token)
        self._opened = threading.Event()
        threading.Thread(target=self._follow, daemon=True).start()
        assert self._opened.wait(HANG_GUARD)

    def _follow(self) -> None:
        try:
            with self._client.stream("GET", "/runs/news") as response:
                self._response = response
                self.status = response.status_code
                self._opened.set()
                for _ in response.iter_bytes():
                    pass
        except httpx.HTTPError:
            pass
        finally:
            self._opened.set()
            self.ended.set()

    def close(self) -> None:
        if self._response is not None:
            self._response.close()
        assert self.ended.wait(HANG_GUARD)


def test_logging_out_ends_that_login_and_its_streams_and_nothing_else(served: Served) -> None:
    # logging out only made the page forget the server's own token: every copy of it (a tab
    # restored with its sessionStorage, one handed it late) went on working, and streams
    # opened with it went on for ever
    mine, other = log_in(served), log_in(served)
    assert mine != other and TOKEN not in (mine, other)
    assert health(served, mine) == health(served, other) == 200
    streams = {name: Following(served, token)
               for name, token in (("mine", mine), ("other", other), ("server", TOKEN))}
    assert all(stream.status == 200 for stream in streams.values())
    ended = served.client(token=mine).post("/logout")
    assert ended.status_code == 200 and ended.json() == {"logged_out": True}
    assert streams["mine"].ended.wait(HANG_GUARD)
    answers: dict[str, Any] = {path: served.client(token=mine).request(method, path)
                               for method, path in (("GET", "/health"), ("GET", "/sessions"),
                                                    ("POST", "/logout"), ("POST", "/login"))}
    assert {path: answer.status_code for path, answer in answers.items()} == {
        "/health": 401, "/sessions": 401, "/logout": 401, "/login": 401}
    # must not fire: the other login, the server's token and their streams go on
    assert health(served, other) == health(served, TOKEN) == 200
    assert not streams["other"].ended.is_set() and not streams["server"].ended.is_set()
    for stream in streams.values():
        stream.close()


def test_the_server_token_is_not_logged_out_and_a_login_cannot_make_another(
        served: Served) -> None:
    refused = served.api.post("/logout")
    assert refused.status_code == 400 and "server's own token" in refused.json()["error"]
    assert health(served, TOKEN) == 200
    login = log_in(served)
    again = served.client(token=login).post("/login")
    assert again.status_code == 403 and "server's token" in again.json()["error"]
    assert health(served, login) == 200


def test_the_oldest_login_ends_when_there_are_too_many(served: Served) -> None:
    first = log_in(served)
    rest = [log_in(served) for _ in range(MOST_LOGINS)]
    assert health(served, first) == 401
    assert health(served, rest[0]) == health(served, rest[-1]) == 200
