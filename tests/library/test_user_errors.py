"""The errors a library user meets first are `ConfigError`s naming what to fix, raised before
any request: a misspelt provider, an empty model name."""

from __future__ import annotations

import pytest

from loopwright import Agent, ConfigError
from loopwright.review import Check
from loopwright.testing import FakeModelServer, Reply


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY",
                 "LOOPWRIGHT_API_KEY", "LOOPWRIGHT_BASE_URL", "LOOPWRIGHT_MODEL"):
        monkeypatch.delenv(name, raising=False)


async def test_a_misspelt_provider_is_named_before_any_request() -> None:
    """`Agent("anthorpic:claude-x")` went to OpenAI and failed for want of OPENAI_API_KEY (the
    CLI caught the typo, the library did not)."""
    agent = Agent("anthorpic:claude-x")
    with pytest.raises(ConfigError, match=r"unknown provider 'anthorpic' in model "
                       r"anthorpic:claude-x: did you mean anthropic:claude-x\?"):
        await agent.run("hi")


async def test_a_model_served_at_a_base_url_is_that_servers_name_whatever_its_spelling(
        ) -> None:
    with FakeModelServer([Reply("hello")]) as server:
        agent = Agent("anthorpic:claude-x", base_url=server.base_url, api_key="k")
        assert (await agent.run("hi")).output == "hello"


async def test_a_provider_spelt_right_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeModelServer([Reply("hello")], flavor="ollama") as server:
        monkeypatch.setenv("LOOPWRIGHT_OLLAMA_URL", server.base_url)
        assert (await Agent("ollama:qwen2.5").run("hi")).output == "hello"


def test_an_empty_model_name_is_refused_when_the_agent_is_made() -> None:
    """`Agent(os.environ.get("MODEL", ""))` failed at the first run with `custom
    (chat_completions): … connection failed`, the empty name nowhere in it."""
    with pytest.raises(ConfigError, match='Agent\\(\\): model = "" is not valid'):
        Agent("")
    assert Agent(None).settings.model is None  # no model: auto-detected at the first run


class AfterNothing(Check):
    name = "after_nothing"
    position = "after:no_such_check"


class AfterUnreadFile(Check):
    name = "after_unread_file"
    position = "after:unread_file"


def test_a_review_check_placed_after_no_check_is_refused_when_the_agent_is_made() -> None:
    """It was accepted, and the first run failed with it."""
    with pytest.raises(ConfigError, match="review check 'after_nothing': position "
                       "'after:no_such_check' is not"):
        Agent("m", review_checks=[AfterNothing()])
    with pytest.raises(ConfigError, match=r"is not a loopwright\.review\.Check"):
        Agent("m", review_checks=[object()])


def test_a_review_check_placed_after_a_check_of_the_table_is_taken() -> None:
    check = AfterUnreadFile()
    assert Agent("m", review_checks=[check]).settings.review_checks == [check]
