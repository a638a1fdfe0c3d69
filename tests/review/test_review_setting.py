"""The `review` setting is checked when the settings are read — `Agent(...)`, the environment,
`loopwright.toml` — not when a run starts: a mode written loosely (`" Auto "`, `"OFF"`) is the
mode, anything else that is not a mode or a list of check names is an error naming the valid
values, before any model is called."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.errors import ConfigError
from loopwright.events import Event, ReviewEvent
from loopwright.review import Check
from loopwright.review.names import CHECK_NAMES
from loopwright.review.table import default_checks
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import cli_env

TWICE = [call("read_file", {"path": "a.txt"}), call("read_file", {"path": "a.txt"})]


def loopwright_run(server: FakeModelServer, cwd: Path, **env: str
                   ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "run", "Say hi.", "--model", "fake-model",
         "--base-url", server.base_url], cwd=cwd, env=cli_env(cwd, **env), input="",
        capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("value", ["false", "yes", "Auto narration", "auto,narrate"])
def test_the_cli_refuses_a_mistyped_review_before_calling_the_model(
        value: str, tmp_path: Path) -> None:
    with FakeModelServer([Reply("hi")], strict=False) as server:
        done = loopwright_run(server, tmp_path, LOOPWRIGHT_REVIEW=value)
        assert not server.model_requests
    assert done.returncode != 0
    assert "review" in done.stderr and "'auto', 'all', 'off'" in done.stderr, done.stderr


@pytest.mark.parametrize("value", [" Auto ", "OFF", "all", "auto, narration"])
def test_the_cli_reads_a_mode_written_loosely_and_a_list_of_checks(
        value: str, tmp_path: Path) -> None:
    with FakeModelServer([Reply("hi")]) as server:
        done = loopwright_run(server, tmp_path, LOOPWRIGHT_REVIEW=value)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"


def test_a_toml_review_that_is_not_a_mode_is_an_error_when_read(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text('[review]\nreview = "sometimes"\n')
    with FakeModelServer([Reply("hi")], strict=False) as server:
        done = loopwright_run(server, tmp_path)
        assert not server.model_requests
    assert done.returncode != 0
    assert "review" in done.stderr and "'auto' | 'all' | 'off'" in done.stderr, done.stderr


def make_agent(server: FakeModelServer, **options: Any) -> Agent:
    return Agent("gpt-4.1", base_url=server.base_url, api_key="k", stream=False, **options)


@pytest.mark.parametrize("review", [["false"], ["auto", "narrate"], "sometimes"])
def test_the_library_refuses_a_mistyped_review_when_the_agent_is_made(review: Any) -> None:
    with FakeModelServer([], strict=False) as server, \
            pytest.raises(ConfigError, match=r"'auto'.*'all'.*'off'"):
        make_agent(server, review=review)


def test_the_environment_is_checked_when_the_agent_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_REVIEW", "false")
    with FakeModelServer([], strict=False) as server, pytest.raises(ConfigError,
                                                                     match="'false'"):
        make_agent(server)


@pytest.mark.parametrize(("value", "checks"), [(" Auto ", ["duplicate_calls"]), ("OFF", [])])
async def test_a_loosely_written_mode_from_the_environment_is_that_mode(
        value: str, checks: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from loopwright import tool

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Read a file."""
        return "hello"

    monkeypatch.setenv("LOOPWRIGHT_REVIEW", value)
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=TWICE), Reply("Done.")]) as server:
        await make_agent(server, tools=[read_file], callbacks=[events.append]).run("Read a.txt")
    assert [e.check for e in events if isinstance(e, ReviewEvent)] == checks


class Polite(Check):
    name = "polite"


def test_a_list_may_name_a_users_own_check() -> None:
    with FakeModelServer([], strict=False) as server:
        make_agent(server, review=["auto", "polite"], review_checks=[Polite()])


def test_the_names_are_the_tables() -> None:
    table = default_checks(doom_loop_threshold=3, max_calls_per_reply=8, prompt_mode=False)
    assert [check.name for check in table] == list(CHECK_NAMES)


def test_a_review_off_naming_no_check_is_an_error_when_the_agent_is_made() -> None:
    with pytest.raises(ConfigError, match=r"review_off .*'narate' is not a check"):
        Agent("fake-model", base_url="http://127.0.0.1:9/v1", api_key="k", review_off=["narate"])
    with pytest.raises(ConfigError, match="'auto' is not a check"):
        Agent("fake-model", base_url="http://127.0.0.1:9/v1", api_key="k", review_off=["auto"])


def test_a_review_off_naming_checks_is_read_as_they_are_named() -> None:
    agent = Agent("fake-model", base_url="http://127.0.0.1:9/v1", api_key="k",
                  review_off=[" narration", "doom_loop"])
    assert agent.settings.review_off == ["narration", "doom_loop"]


def test_the_cli_refuses_a_mistyped_review_off_before_calling_the_model(tmp_path: Path) -> None:
    with FakeModelServer([Reply("hi")], strict=False) as server:
        done = loopwright_run(server, tmp_path, LOOPWRIGHT_REVIEW_OFF="narate")
        assert not server.model_requests
    assert done.returncode != 0
    assert "review_off" in done.stderr and "'narate' is not a check" in done.stderr, done.stderr
