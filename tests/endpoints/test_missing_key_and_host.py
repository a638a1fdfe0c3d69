"""A hosted provider with no key fails at once with the CLI's one-line fix, and a host name
that does not resolve is retried once, not six times (a new user's walk-through, item 6)."""

from __future__ import annotations

import time

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


@pytest.mark.parametrize(("model", "fix"), [
    ("gpt-4o-mini", "no API key for openai: set OPENAI_API_KEY (or LOOPWRIGHT_API_KEY), "
                    "or pass Agent(api_key=…) (--api-key on the command line)"),
    ("anthropic:claude-sonnet-4-5", "no API key for anthropic: set ANTHROPIC_API_KEY (or "
                                    "LOOPWRIGHT_API_KEY), or pass Agent(api_key=…) (--api-key "
                                    "on the command line)"),
])
async def test_a_hosted_provider_without_a_key_fails_on_the_first_run_at_once(
        model: str, fix: str) -> None:
    events: list[Event] = []
    agent = Agent(model, callbacks=[events.append])  # the default retry policy
    started = time.monotonic()
    with pytest.raises(AuthError) as raised:
        await agent.run("Hi", raise_on_error=True)
    assert str(raised.value).endswith(fix)
    assert retries(events) == 0
    assert time.monotonic() - started < 5


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
