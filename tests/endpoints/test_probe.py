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
from loopwright.testing import FakeModelServer, Flavor, Reply


@pytest.mark.parametrize(("flavor", "source"), [
    ("ollama", "probe:/api/ps"),
    ("llamacpp", "probe:/props"),
    ("lmstudio", "probe:/api/v0/models"),
    ("vllm", "probe:/v1/models"),
    ("openai", "probe:/v1/models"),  # a generic OpenAI-compatible server lists it there
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
        probes = [r.path for r in server.requests if r.format is None]
    assert [(w.tokens, w.source) for w in windows] == [(6_000, "probe:/props")]
    assert again == windows
    # one request tells which server answers, then that server's own window endpoint
    assert probes == ["/v1/models", "/props"]


@pytest.mark.parametrize(("flavor", "window_paths"), [
    ("ollama", ["/api/ps", "/api/show"]),
    ("llamacpp", ["/props"]),
    ("lmstudio", ["/api/v0/models"]),
    ("vllm", []),  # the listing is its window endpoint, and seconds old: reused
])
async def test_the_kind_of_local_server_is_asked_once_per_base_url(
        flavor: Flavor, window_paths: list[str]) -> None:
    with FakeModelServer(context_window=6_000, flavor=flavor, model="m") as server:
        first = await Agent("m", base_url=server.base_url, api_key="k").context_windows()
        seen = len(server.requests)
        second = await Agent("m", base_url=server.base_url + "/",  # the same base URL
                             api_key="k").context_windows()
        later = [r.path for r in server.requests[seen:]]
        identifying = [r.path for r in server.requests[:seen]].count("/v1/models")
    assert first[0].tokens == second[0].tokens == 6_000
    assert identifying == 1 and sorted(later) == sorted(window_paths)


async def test_a_hosted_provider_with_a_known_window_is_not_probed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeModelServer([Reply("hello")], context_window=6_000, model="gpt-4o-mini") as server:
        monkeypatch.setenv("LOOPWRIGHT_OPENAI_URL", server.base_url)  # stands in for OpenAI
        async with Agent("openai:gpt-4o-mini", api_key="k") as agent:
            result = await agent.run("hi")
            windows = await agent.context_windows()
        paths = [r.path for r in server.requests]
    assert result.stop_reason == "completed"
    assert (windows[0].tokens, windows[0].source) == (128_000, "metadata")
    assert paths == ["/v1/chat/completions"]  # the model call, and nothing before it


async def test_a_hosted_provider_with_an_unknown_model_is_not_probed_either(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeModelServer(context_window=6_000, model="brand-new") as server:
        monkeypatch.setenv("LOOPWRIGHT_OPENAI_URL", server.base_url)
        windows = await Agent("openai:brand-new", api_key="k").context_windows()
        assert server.requests == []
    assert (windows[0].tokens, windows[0].source) == (DEFAULT_HOSTED_WINDOW, "default")


async def test_a_known_model_on_a_local_server_is_still_asked() -> None:
    """The table's window is the model's maximum; a local server runs it with its own."""
    with FakeModelServer(context_window=6_000, flavor="llamacpp", model="gpt-4o-mini") as server:
        windows = await Agent("gpt-4o-mini", base_url=server.base_url,
                              api_key="k").context_windows()
    assert (windows[0].tokens, windows[0].source) == (6_000, "probe:/props")


async def test_probes_close_their_connections_and_model_calls_keep_theirs() -> None:
    # the probes run at once, each on its own connection: kept open, every later model request
    # of the process paid for them (the pool walks and polls each idle connection per request)
    with FakeModelServer(model="m") as server:
        async with Agent("m", base_url=server.base_url, api_key="k", cache_dir=None) as agent:
            await agent.run("go", raise_on_error=False)  # nothing scripted: only headers count
    probes = [r for r in server.requests if r.format is None]
    assert [r.path for r in probes] == ["/v1/models"]  # a server that tells no window
    assert {r.headers.get("connection") for r in probes} == {"close"}
    # HTTP/1.1: kept unless the request says "close" (loopwright sends no `connection` header)
    assert [r.headers.get("connection") for r in server.model_requests] == [None]


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
                                          "--api-key", "k", "--no-scan", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert rows == [{"role": "primary", "tokens": 7_777, "source": "probe:/v1/models",
                     "model": "m", "provider": "custom", "base_url": base_url}]


@pytest.mark.parametrize(("model", "checked"), [
    ("gpt-4o-mini", []),  # its window is known: nothing is asked before the model call
    ("brand-new", ["/v1/models"]),  # not in the table: the listing checks the name
])
def test_run_asks_a_hosted_provider_nothing_when_the_window_is_known(
        monkeypatch: pytest.MonkeyPatch, model: str, checked: list[str]) -> None:
    with FakeModelServer([Reply("hello")], model=model) as server:
        monkeypatch.setenv("LOOPWRIGHT_OPENAI_URL", server.base_url)  # stands in for OpenAI
        result = CliRunner().invoke(app, ["run", "hi", "--model", f"openai:{model}",
                                          "--api-key", "k"])
        paths = [r.path for r in server.requests]
    assert result.exit_code == 0, result.output
    assert paths == [*checked, "/v1/chat/completions"]
