"""Live context-window detection (DESIGN §3 last point) against the fake server's probes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from loopwright import Agent
from loopwright.cli.main import app
from loopwright.endpoints.probe import (
    DEFAULT_HOSTED_WINDOW,
    DEFAULT_LOCAL_WINDOW,
    detect_window,
    probe_server,
)
from loopwright.endpoints.resolve import resolve_model
from loopwright.profiles.metadata import model_info
from loopwright.testing import FakeModelServer, Flavor


@pytest.mark.parametrize(("flavor", "source"), [
    ("ollama", "probe:/api/ps"),
    ("llamacpp", "probe:/props"),
    ("lmstudio", "probe:/api/v0/models"),
    ("vllm", "probe:/v1/models"),
    ("openai", "probe:/api/ps"),
])
async def test_each_local_server_flavor_reports_its_window(flavor: Flavor, source: str) -> None:
    with FakeModelServer(context_window=12_345, flavor=flavor, model="m") as server:
        found = await probe_server(server.base_url, "m")
    assert found == (12_345, source)


async def test_the_agent_probes_once_before_its_first_call_and_reports_the_source() -> None:
    with FakeModelServer(context_window=6_000, flavor="llamacpp", model="m") as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", cache_dir=None)
        windows = await agent.context_windows()
        again = await agent.context_windows()
        probes = [r for r in server.requests if r.format is None]
    assert [(w.tokens, w.source) for w in windows] == [(6_000, "probe:/props")]
    assert again == windows
    assert len(probes) == 5  # one round of probes, cached by the agent


async def test_probes_close_their_connections_and_model_calls_keep_theirs() -> None:
    # the probes run at once, each on its own connection: kept open, every later model request
    # of the process paid for them (the pool walks and polls each idle connection per request)
    with FakeModelServer(model="m") as server:
        async with Agent("m", base_url=server.base_url, api_key="k", cache_dir=None) as agent:
            await agent.run("go", raise_on_error=False)  # nothing scripted: only headers count
    probes = [r for r in server.requests if r.format is None]
    assert len(probes) == 5
    assert {r.headers.get("connection") for r in probes} == {"close"}
    assert [r.headers.get("connection") for r in server.model_requests] == ["keep-alive"]


async def test_an_explicit_window_wins_and_nothing_is_probed() -> None:
    with FakeModelServer(context_window=6_000, model="m") as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", context_window=3_000)
        windows = await agent.context_windows()
        assert server.requests == []
    assert (windows[0].tokens, windows[0].source) == (3_000, "explicit")


async def test_a_local_server_that_reports_nothing_gets_the_local_default() -> None:
    with FakeModelServer(model="m") as server:
        info = await detect_window(resolve_model("m", base_url=server.base_url))
    assert (info.tokens, info.source) == (DEFAULT_LOCAL_WINDOW, "default")


async def test_an_implausible_window_is_ignored() -> None:
    with FakeModelServer(context_window=100, model="m") as server:
        info = await detect_window(resolve_model("m", base_url=server.base_url))
    assert info.source == "default"


async def test_ollama_reporting_another_loaded_model_is_not_taken_for_ours() -> None:
    with FakeModelServer(context_window=9_000, flavor="ollama", model="other") as server:
        assert await probe_server(server.base_url, "mine") is None
        assert await probe_server(server.base_url, "other") == (9_000, "probe:/api/ps")


async def test_lm_studio_reports_the_loaded_window_not_the_maximum() -> None:
    with FakeModelServer(context_window=4_096, max_context_window=32_768, flavor="lmstudio",
                         model="m") as server:
        assert await probe_server(server.base_url, "m") == (4_096, "probe:/api/v0/models")


async def test_hosted_models_come_from_metadata_without_any_request() -> None:
    info = await detect_window(resolve_model("gpt-4o", api_key="k"))
    assert (info.tokens, info.source) == (128_000, "metadata")
    claude = await detect_window(resolve_model("anthropic:claude-sonnet-4-5-20250929",
                                               api_key="k"))
    assert (claude.tokens, claude.source) == (200_000, "metadata")
    unknown = await detect_window(resolve_model("openai:brand-new-model", api_key="k"))
    assert (unknown.tokens, unknown.source) == (DEFAULT_HOSTED_WINDOW, "default")


def test_metadata_matches_families_by_prefix_and_carries_prices() -> None:
    mini = model_info("openrouter:openai/gpt-4o-mini-2024-07-18")
    assert mini is not None and mini.name == "gpt-4o-mini" and mini.context_window == 128_000
    assert mini.price is not None and mini.price.input == 0.15
    assert model_info("gpt-4") is not None and model_info("gpt-4o") is not None
    assert model_info("gpt-4o").name == "gpt-4o"  # type: ignore[union-attr]  # not "gpt-4"
    assert model_info("gpt-5.1").context_window == 400_000  # type: ignore[union-attr]
    assert model_info("totally-unknown") is None


def test_the_models_command_shows_the_window_and_its_source() -> None:
    with FakeModelServer(context_window=7_777, flavor="vllm", model="m") as server:
        base_url = server.base_url
        result = CliRunner().invoke(app, ["models", "--model", "m", "--base-url", base_url,
                                          "--api-key", "k", "--no-local", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert rows == [{"role": "primary", "tokens": 7_777, "source": "probe:/v1/models",
                     "model": "m", "provider": "custom", "base_url": base_url}]
