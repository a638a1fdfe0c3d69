"""API mode resolution (DESIGN §3): explicit api_mode → provider prefix → base-URL heuristic →
chat_completions; aliases from loopwright.toml; base URLs with or without /v1."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.endpoints.resolve import resolve_model
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer, Reply

NO_ENV: dict[str, str] = {}


@pytest.mark.parametrize(("model", "mode", "base_url"), [
    ("anthropic:claude-sonnet-4-5", "anthropic_messages", "https://api.anthropic.com/v1"),
    ("openai:gpt-4o-mini", "chat_completions", "https://api.openai.com/v1"),
    ("openrouter:openai/gpt-4o", "chat_completions", "https://openrouter.ai/api/v1"),
    ("ollama:qwen2.5", "chat_completions", "http://127.0.0.1:11434/v1"),
    ("lmstudio:qwen2.5", "chat_completions", "http://127.0.0.1:1234/v1"),
    ("vllm:qwen2.5", "chat_completions", "http://127.0.0.1:8000/v1"),
    ("llamacpp:qwen2.5", "chat_completions", "http://127.0.0.1:8080/v1"),
])
def test_a_provider_prefix_picks_mode_and_endpoint(model: str, mode: str, base_url: str) -> None:
    resolved = resolve_model(model, environ=NO_ENV)
    assert resolved.mode == mode
    assert resolved.endpoint.base_url == base_url
    assert resolved.model == model.split(":", 1)[1]
    assert resolved.provider == model.split(":", 1)[0]


def test_an_explicit_api_mode_beats_the_prefix_and_the_url() -> None:
    resolved = resolve_model("anthropic:claude", base_url="https://api.anthropic.com",
                             api_mode="chat_completions", environ=NO_ENV)
    assert resolved.mode == "chat_completions"
    assert resolved.endpoint.auth_header == "authorization"


def test_the_prefix_beats_the_url_heuristic() -> None:
    resolved = resolve_model("openai:gpt-4o", base_url="https://proxy.example/anthropic",
                             environ=NO_ENV)
    assert resolved.mode == "chat_completions"


@pytest.mark.parametrize(("url", "mode"), [
    ("https://api.anthropic.com", "anthropic_messages"),
    ("https://api.anthropic.com/v1", "anthropic_messages"),
    ("https://api.deepseek.com/anthropic", "anthropic_messages"),
    ("http://127.0.0.1:9000/v1/messages", "anthropic_messages"),
    ("http://127.0.0.1:9000/v1/responses", "responses"),
    ("http://127.0.0.1:9000/v1/chat/completions", "chat_completions"),
    ("https://api.openai.com/v1", "chat_completions"),
    ("http://127.0.0.1:9000", "chat_completions"),
])
def test_the_base_url_hints_at_the_mode_else_chat_completions(url: str, mode: str) -> None:
    resolved = resolve_model("some-model", base_url=url, environ=NO_ENV)
    assert resolved.mode == mode
    assert resolved.model == "some-model"
    assert resolved.endpoint.base_url.endswith("/v1")


def test_anthropic_endpoints_authenticate_with_x_api_key_and_a_version() -> None:
    resolved = resolve_model("anthropic:claude", environ={"ANTHROPIC_API_KEY": "sk-ant"})
    headers = resolved.endpoint.request_headers()
    assert headers["x-api-key"] == "sk-ant"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


def test_an_explicit_key_beats_the_environment() -> None:
    resolved = resolve_model("openai:gpt", api_key="mine", environ={"OPENAI_API_KEY": "env"})
    assert resolved.endpoint.api_key == "mine"


def test_an_alias_expands_before_resolution() -> None:
    resolved = resolve_model("fast", aliases={"fast": "ollama:qwen2.5"}, environ=NO_ENV)
    assert (resolved.provider, resolved.model, resolved.mode) == (
        "ollama", "qwen2.5", "chat_completions")


def test_an_unknown_api_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="api_mode"):
        resolve_model("m", api_mode="completions", environ=NO_ENV)


@pytest.mark.parametrize("mode", ["chat_completions", "responses", "anthropic_messages"])
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_the_base_url_works_with_or_without_v1_in_every_mode(mode: str,
                                                                   suffix: str) -> None:
    with FakeModelServer([Reply("ok")]) as server:
        agent = Agent("m", base_url=server.url + suffix, api_key="k", api_mode=mode)
        result = await agent.run("hi")
    assert result.output == "ok"
    (request,) = server.model_requests
    assert request.format == mode
    assert request.path.startswith("/v1/")


async def test_aliases_from_loopwright_toml_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loopwright.toml").write_text('aliases = { fast = "anthropic:claude-fast" }\n')
    monkeypatch.chdir(tmp_path)
    with FakeModelServer([Reply("from the alias")]) as server:
        result = await Agent("fast", base_url=server.url, api_key="k").run("hi")
    assert result.output == "from the alias"
    (request,) = server.model_requests
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-fast"


async def test_aliases_from_the_file_named_by_loopwright_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text('[loopwright]\naliases = { smart = "openai:gpt-smart" }\n'
                      'api_mode = "responses"\n')
    monkeypatch.setenv("LOOPWRIGHT_CONFIG", str(config))
    with FakeModelServer([Reply("ok")]) as server:
        result = await Agent("smart", base_url=server.base_url, api_key="k").run("hi")
    assert result.output == "ok"
    (request,) = server.model_requests
    assert request.path == "/v1/responses"
    assert request.body["model"] == "gpt-smart"


def test_loopwright_provider_url_moves_a_local_provider() -> None:
    env = {"LOOPWRIGHT_OLLAMA_URL": "http://gpu-box:11434/v1"}
    resolved = resolve_model("ollama:qwen2.5", environ=env)
    assert resolved.endpoint.base_url == "http://gpu-box:11434/v1"
    assert resolved.provider == "ollama"


def test_a_base_url_without_a_scheme_is_a_configuration_error_naming_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"has no scheme: write http://localhost:8000/v1"):
        resolve_model("m", base_url="localhost:8000/v1", environ=NO_ENV)


@pytest.mark.parametrize(("base_url", "local"), [
    ("http://127.0.0.1:8080/v1", True), ("http://LOCALHOST:11434", True),
    ("http://[::1]:8000/v1", True), ("http://gpu-box.local:8000/v1", True),
    ("https://api.openai.com/v1", False), ("http://127.0.0.1.example.com/v1", False),
    ("https://local.example.com/v1", False)])
def test_an_endpoint_is_local_by_its_host_every_time_it_is_asked(base_url: str,
                                                                 local: bool) -> None:
    # the answer is kept per base URL (asked for every run): the same on the second asking
    endpoint = resolve_model("m", base_url=base_url, environ=NO_ENV).endpoint
    assert endpoint.is_local is local
    assert endpoint.is_local is local
