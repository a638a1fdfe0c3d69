"""A hosted provider with no key fails at once with the CLI's one-line fix, and a host name
that does not resolve is retried once, not six times (a new user's walk-through, item 6)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import AuthError, ProviderError
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import REFUSED_URL

FAST = RetryPolicy(base_delay=0.01, jitter=0)
UNRESOLVABLE = "http://no-such-host.invalid/v1"  # RFC 6761: never resolves


def retries(events: list[Event]) -> int:
    return sum(1 for e in events if isinstance(e, StatusEvent) and e.kind == "retrying")


@asynccontextmanager
async def every_connection_seen(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[bytes]]:
    """Every HTTP(S) request the process makes goes through a local proxy, which records the
    start of each connection and closes it: nothing leaves for the hosted provider."""
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readline())  # "CONNECT api.openai.com:443 HTTP/1.1"
        writer.close()

    proxy = await asyncio.start_server(record, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY"):
        monkeypatch.setenv(name, url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    async with proxy:
        yield seen


@pytest.mark.parametrize(("model", "fix"), [
    ("gpt-4o-mini", "no API key for openai: set OPENAI_API_KEY (or LOOPWRIGHT_API_KEY), "
                    "or pass Agent(api_key=…) (--api-key on the command line)"),
    ("anthropic:claude-sonnet-4-5", "no API key for anthropic: set ANTHROPIC_API_KEY (or "
                                    "LOOPWRIGHT_API_KEY), or pass Agent(api_key=…) (--api-key "
                                    "on the command line)"),
])
async def test_a_hosted_provider_without_a_key_fails_on_the_first_run_at_once(
        model: str, fix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # "at once": no request is sent (it could only be refused, or hang without a network) and
    # none is retried after the default policy's pauses
    events: list[Event] = []
    async with every_connection_seen(monkeypatch) as seen:
        agent = Agent(model, callbacks=[events.append])  # the default retry policy
        with pytest.raises(AuthError) as raised:
            await agent.run("Hi", raise_on_error=True)
    assert str(raised.value).endswith(fix)
    assert retries(events) == 0
    assert seen == []


async def test_a_hosted_provider_with_a_key_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # the proxy above sees what is sent: with a key, the request goes out (and fails at the
    # proxy, retried no more with one attempt)
    async with every_connection_seen(monkeypatch) as seen:
        agent = Agent("gpt-4o-mini", api_key="sk-test", retry=RetryPolicy(attempts=1))
        result = await agent.run("Hi", raise_on_error=False)
    assert result.stop_reason == "error"
    assert seen and seen[0].startswith(b"CONNECT api.openai.com:443 ")


async def test_a_key_given_or_a_server_of_ones_own_needs_no_provider_key() -> None:
    with FakeModelServer([Reply(text="ok"), Reply(text="ok too")]) as server:
        # the same model name at a server of one's own: "custom", no key to ask for
        assert (await Agent("gpt-4o-mini", base_url=server.base_url).run("Hi")).output == "ok"
        # the provider's format at another address (a gateway): it may need no key
        agent = Agent("openai:gpt-4o-mini", base_url=server.base_url)
        assert (await agent.run("Hi")).output == "ok too"


async def test_a_host_name_that_does_not_resolve_is_retried_once() -> None:
    events: list[Event] = []
    agent = Agent("m", base_url=UNRESOLVABLE, api_key="k", retry=FAST,
                  callbacks=[events.append])
    result = await agent.run("Hi", raise_on_error=False)
    assert result.error is not None
    assert "cannot resolve no-such-host.invalid (" in result.error
    assert result.error.endswith("check the base URL's host name and the network")
    assert retries(events) == 1


async def test_a_refused_connection_keeps_every_attempt() -> None:
    # a local server may be starting up: that may heal within the retries' seconds
    events: list[Event] = []
    agent = Agent("m", base_url=REFUSED_URL, api_key="k", retry=FAST,
                  callbacks=[events.append])
    with pytest.raises(ProviderError, match=r"gave up after 6 attempts: .*connection failed"):
        await agent.run("Hi", raise_on_error=True)
    assert retries(events) == 5
