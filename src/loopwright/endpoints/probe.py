"""The live context window: ask the server, else the metadata table, else a safe default.

Order, first answer wins:

1. an explicit `context_window` setting (source `"explicit"`);
2. for local and unknown ("custom") endpoints, the server itself, all probes at once with a short
   timeout: Ollama `/api/ps` (the loaded model's `context_length`) and `/api/show` (a `num_ctx`
   parameter), llama.cpp `/props` (`default_generation_settings.n_ctx`), LM Studio
   `/api/v0/models` (`loaded_context_length`), vLLM and other OpenAI-compatible servers
   `/v1/models` (`max_model_len`, `context_length`, …) (source `"probe:<path>"`);
3. for hosted endpoints, the offline metadata table (source `"metadata"`);
4. a default (source `"default"`): `DEFAULT_LOCAL_WINDOW` for local servers, whose real window is a
   runtime setting (Ollama's default is a few thousand tokens whatever the model could do, so a
   model's nominal window is not trusted there), `DEFAULT_HOSTED_WINDOW` otherwise.

Numbers outside `MIN_WINDOW..MAX_WINDOW` are ignored as nonsense.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from loopwright.endpoints.base import normalize_base_url, request_slot
from loopwright.endpoints.resolve import PROVIDERS, Resolved
from loopwright.errors import ConfigError
from loopwright.profiles.metadata import model_info

PROBE_TIMEOUT = 1.0
MIN_WINDOW = 512
MAX_WINDOW = 10_000_000
DEFAULT_LOCAL_WINDOW = 8192
DEFAULT_HOSTED_WINDOW = 32768
# fields that carry a window on an OpenAI-compatible `/v1/models` entry, most specific first
_MODELS_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length",
                  "max_seq_len")


@dataclass(frozen=True, kw_only=True, slots=True)
class WindowInfo:
    """A model's context window in tokens and where the number came from."""

    tokens: int
    source: str  # "explicit" | "probe:/api/ps" | … | "metadata" | "default"
    model: str = ""
    provider: str = ""
    base_url: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "source": self.source, "model": self.model,
                "provider": self.provider, "base_url": self.base_url}


def server_root(base_url: str) -> str:
    """`http://host:11434/v1` → `http://host:11434` (probe endpoints live at the root)."""
    url = normalize_base_url(base_url)
    head, _, last = url.rpartition("/")
    return head if re.fullmatch(r"v\d+[a-z0-9]*", last) else url


def sane(value: Any) -> int | None:
    """`value` as a window if it is a plausible one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if MIN_WINDOW <= number <= MAX_WINDOW else None


def _same_model(entry_id: str, model: str) -> bool:
    a, b = entry_id.lower(), model.lower()
    if a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]:
        return True
    # Ollama lists "qwen2.5:latest" for a request naming "qwen2.5"
    return a.partition(":")[0] == b and a.endswith(":latest")


def _pick(entries: list[Any], model: str, id_keys: tuple[str, ...], *,
          only_one_will_do: bool = True) -> dict[str, Any] | None:
    """The entry for `model`; else, if allowed, the only entry when there is just one (a server
    that serves one model answers to any name)."""
    dicts = [e for e in entries if isinstance(e, dict)]
    for entry in dicts:
        if any(isinstance(entry.get(k), str) and _same_model(entry[k], model) for k in id_keys):
            return entry
    return dicts[0] if only_one_will_do and len(dicts) == 1 else None


def _from_ollama_ps(data: Any, model: str) -> int | None:
    # Ollama lists every loaded model; another model's window says nothing about this one
    entry = _pick(data.get("models") or [], model, ("name", "model"), only_one_will_do=False)
    return sane(entry.get("context_length")) if entry else None


def _from_ollama_show(data: Any, model: str) -> int | None:
    # only an explicit num_ctx is the runtime window; model_info's context_length is the maximum
    match = re.search(r"(?m)^\s*num_ctx\s+(\d+)", str(data.get("parameters") or ""))
    return sane(match.group(1)) if match else None


def _from_llamacpp_props(data: Any, model: str) -> int | None:
    settings = data.get("default_generation_settings") or {}
    return sane(settings.get("n_ctx") if isinstance(settings, dict) else None) or sane(
        data.get("n_ctx"))


def _from_lmstudio(data: Any, model: str) -> int | None:
    # an unloaded model's window is whatever it will be loaded with later: only loaded ones count
    loaded = [e for e in data.get("data") or []
              if isinstance(e, dict) and e.get("state", "loaded") == "loaded"]
    entry = _pick(loaded, model, ("id",))
    return sane(entry.get("loaded_context_length")) if entry else None


def _from_models(data: Any, model: str) -> int | None:
    entry = _pick(data.get("data") or data.get("models") or [], model, ("id", "name"))
    if entry is None:
        return None
    for key in _MODELS_FIELDS:
        window = sane(entry.get(key))
        if window is not None:
            return window
    return None


Extractor = Callable[[Any, str], int | None]


async def _ask(url: str, *, method: str, model: str, extract: Extractor, timeout: float,
               headers: dict[str, str]) -> int | None:
    # one-off requests, several at once: kept open, each idle connection would be walked (and
    # its socket polled) by the pool on every later model request of the process
    headers = {**headers, "connection": "close"}
    try:
        async with request_slot() as client:
            if method == "POST":
                reply = await client.post(url, json={"model": model}, headers=headers,
                                          timeout=timeout)
            else:
                reply = await client.get(url, headers=headers, timeout=timeout)
        if reply.status_code != 200:
            return None
        data = reply.json()
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError):
        return None  # nothing there, or not a server that knows this path: ask the next one
    if not isinstance(data, dict):
        return None
    try:
        return extract(data, model)
    except (AttributeError, TypeError):
        return None  # an unexpected shape: this server is not what the path suggested


async def probe_server(base_url: str, model: str, *, timeout: float = PROBE_TIMEOUT,
                       headers: dict[str, str] | None = None) -> tuple[int, str] | None:
    """Ask a server for `model`'s live window: (tokens, source) or None if nothing answered."""
    root = server_root(base_url)
    probes: list[tuple[str, str, str, Extractor]] = [
        ("/api/ps", "GET", root + "/api/ps", _from_ollama_ps),
        ("/api/show", "POST", root + "/api/show", _from_ollama_show),
        ("/props", "GET", root + "/props", _from_llamacpp_props),
        ("/api/v0/models", "GET", root + "/api/v0/models", _from_lmstudio),
        ("/v1/models", "GET", normalize_base_url(base_url) + "/models", _from_models),
    ]
    sent = {k: v for k, v in (headers or {}).items() if k.lower() != "content-type"}
    asks: list[Awaitable[int | None]] = [
        _ask(url, method=method, model=model, extract=extract, timeout=timeout, headers=sent)
        for _, method, url, extract in probes
    ]
    answers = await asyncio.gather(*asks)
    for (path, *_), window in zip(probes, answers, strict=True):
        if window is not None:
            return window, f"probe:{path}"
    return None


_ERROR_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*)"),  # OpenAI, vLLM
    re.compile(r"\d[\d,]*\s*tokens?\s*>\s*(\d[\d,]*)\s*maximum"),  # Anthropic
    re.compile(r"exceed context limit: \d+ \+ \d+ > (\d+)"),  # Anthropic, with max_tokens
    re.compile(r"maximum model length of (\d[\d,]*)"),  # vLLM's decoder-prompt check
    re.compile(r"context (?:size|window|length)[^\d]{0,20}(\d[\d,]*)"),  # llama.cpp, others
    re.compile(r"n_ctx\D{0,6}(\d+)"),
)


def window_from_error(text: str) -> int | None:
    """The window a provider names in its "prompt too long" error, if it names one."""
    for pattern in _ERROR_WINDOW_PATTERNS:
        match = pattern.search(text.lower())
        if match:
            found = sane(match.group(1).replace(",", ""))
            if found is not None:
                return found
    return None


def is_local(resolved: Resolved) -> bool:
    info = PROVIDERS.get(resolved.provider)
    return resolved.endpoint.is_local or bool(info and info.local)


def should_probe(resolved: Resolved) -> bool:
    """Local servers and unknown hosts are asked; well-known hosted APIs are not."""
    return is_local(resolved) or resolved.provider not in PROVIDERS


async def detect_window(resolved: Resolved, *, explicit: int | None = None,
                        timeout: float = PROBE_TIMEOUT) -> WindowInfo:
    """The context window of one resolved model (see the module docstring for the order)."""
    where = {"model": resolved.model, "provider": resolved.provider,
             "base_url": resolved.endpoint.base_url}
    if explicit:
        return WindowInfo(tokens=int(explicit), source="explicit", **where)
    if should_probe(resolved):
        found = await probe_server(resolved.endpoint.base_url, resolved.model, timeout=timeout,
                                   headers=resolved.endpoint.request_headers())
        if found is not None:
            return WindowInfo(tokens=found[0], source=found[1], **where)
    local = is_local(resolved)
    if not local:
        info = model_info(resolved.model)
        if info is not None:
            return WindowInfo(tokens=info.context_window, source="metadata", **where)
    default = DEFAULT_LOCAL_WINDOW if local else DEFAULT_HOSTED_WINDOW
    return WindowInfo(tokens=default, source="default", **where)


async def detect_windows(chain: list[Resolved], *, explicit: int | None = None,
                         timeout: float = PROBE_TIMEOUT) -> list[WindowInfo]:
    """`detect_window` for the primary and every fallback, concurrently."""
    return list(await asyncio.gather(*(detect_window(r, explicit=explicit, timeout=timeout)
                                       for r in chain)))


PREFLIGHT_TIMEOUT = 5.0


async def preflight(resolved: Resolved, *, timeout: float = PREFLIGHT_TIMEOUT) -> None:
    """Check a provider before the first request: a key where a hosted provider needs one, a
    server that answers at the base URL and accepts the key, and — where the server lists its
    models — the model among them. Raises `ConfigError` with the fix in one line."""
    info = PROVIDERS.get(resolved.provider)
    key_env = info.key_env if info else None
    base_url = resolved.endpoint.base_url
    if key_env and not resolved.endpoint.api_key:
        raise ConfigError(f"no API key for {resolved.provider}: set {key_env} (or "
                          "LOOPWRIGHT_API_KEY), or pass --api-key")
    headers = {k: v for k, v in resolved.endpoint.request_headers().items()
               if k.lower() != "content-type"}
    headers["connection"] = "close"  # a one-off request (see `_ask`)
    try:
        async with request_slot() as client:
            reply = await client.get(normalize_base_url(base_url) + "/models", headers=headers,
                                     timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        raise ConfigError(f"nothing answers at {base_url} ({reason}): start the server, or pass "
                          "--base-url with its address") from None
    if reply.status_code in (401, 403):
        where = key_env or "LOOPWRIGHT_API_KEY"
        raise ConfigError(f"{base_url} refused the API key (HTTP {reply.status_code}): check "
                          f"{where} or --api-key")
    if reply.status_code != 200:
        return  # a server that does not list its models: the first request will tell
    served = _served_ids(reply)
    # a server listing a single model answers to any name (llama.cpp): only a list can rule out
    if len(served) > 1 and not any(_same_model(entry, resolved.model) for entry in served):
        shown = ", ".join(served[:8]) + (", …" if len(served) > 8 else "")
        raise ConfigError(f"model {resolved.model!r} is not served at {base_url}; it serves "
                          f"{shown}: pass --model with one of them")


def _served_ids(reply: httpx.Response) -> list[str]:
    try:
        data = reply.json()
        entries = data.get("data") or data.get("models") or []
    except (ValueError, AttributeError):
        return []
    if not isinstance(entries, list):
        return []
    return [str(e.get("id") or e.get("name")) for e in entries
            if isinstance(e, dict) and isinstance(e.get("id") or e.get("name"), str)]
