"""Errors a library user meets name the library's way to fix them (`Agent(api_key=…)`,
`base_url=…`, `loopwright.local.local_model()`) beside the command line's flag; the command's
own wording (its flags only) is kept by the CLI tests (tests/cli/test_preflight.py,
tests/cli/test_endpoint_paths.py, tests/endpoints/test_web_pages.py)."""

from __future__ import annotations

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import AuthError, ConfigError

FAST = RetryPolicy(base_delay=0.01, jitter=0)


async def test_a_missing_key_names_the_agents_keyword_and_the_flag() -> None:
    with pytest.raises(AuthError) as raised:
        await Agent("gpt-4o-mini", retry=FAST).run("Hi", raise_on_error=True)
    assert str(raised.value).endswith(
        "no API key for openai: set OPENAI_API_KEY (or LOOPWRIGHT_API_KEY), or pass "
        "Agent(api_key=…) (--api-key on the command line)")


async def test_no_provider_found_names_base_url_and_local_model() -> None:
    with pytest.raises(ConfigError) as raised:
        await Agent(retry=FAST).run("Hi", raise_on_error=True)
    message = str(raised.value)
    assert message.startswith("no model provider found.")
    assert 'Agent("qwen2.5", base_url="http://127.0.0.1:11434/v1")' in message
    assert "loopwright.local.local_model()" in message
    assert "--local on the command line" in message
    assert "pass --local for" not in message  # the command's wording is the command's
