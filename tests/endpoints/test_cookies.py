"""The shared client's cookies (endpoints/cookies.py): a cookie a provider sets is kept and sent
back as httpx keeps it; a response that sets none is not read for cookies at all."""

from __future__ import annotations

import http.cookiejar
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Fault, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@pytest.fixture
def jar_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The responses the standard library's cookie jar was handed (each one's status line)."""
    reads: list[str] = []
    original = http.cookiejar.CookieJar.extract_cookies

    def counted(self: http.cookiejar.CookieJar, response: Any, request: Any) -> None:
        reads.append(response.info().get("set-cookie", ""))
        original(self, response, request)

    monkeypatch.setattr(http.cookiejar.CookieJar, "extract_cookies", counted)
    return reads


async def test_a_cookie_a_response_sets_is_sent_with_the_next_request(
        jar_reads: list[str]) -> None:
    # a load balancer's stickiness cookie on a 503, then the retry
    sticky = Fault.status(503, headers={"Set-Cookie": "lb=node-7; Path=/"})
    with FakeModelServer(replies=[sticky, Reply(text="ok")]) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST).run("go")
    assert result.output == "ok"
    first, second = server.model_requests
    assert "cookie" not in first.headers
    assert second.headers["cookie"] == "lb=node-7"
    assert jar_reads == ["lb=node-7; Path=/"]  # the reply without one was not read


async def test_responses_without_a_set_cookie_are_not_read_for_cookies(
        jar_reads: list[str]) -> None:
    replies = [Reply(tool_calls=[call("nothing", {})]), Reply(text="done")]
    with FakeModelServer(replies=replies, strict=False) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", stream=False,
                             retry=FAST).run("go")
    assert result.output == "done" and len(server.model_requests) == 2
    assert all("cookie" not in r.headers for r in server.model_requests)
    assert jar_reads == []
