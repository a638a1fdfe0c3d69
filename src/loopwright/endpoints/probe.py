"""The live context window: ask the server, else the metadata table, else a safe default.

Order, first answer wins:

1. an explicit `context_window` setting (source `"explicit"`);
2. for a hosted endpoint (not on this machine or the local network), the offline metadata table
   when it knows the model (source `"metadata"`), with no request at all;
3. for local and unknown ("custom") endpoints, the server itself: one `GET /models` tells which
   kind of server answers (`endpoints/servers.py`, kept per base URL and credentials), then
   that kind's own window, asked once: Ollama `/api/ps` (the loaded model's `context_length`)
   with `/api/show` (a `num_ctx` parameter), llama.cpp `/props`
   (`default_generation_settings.n_ctx`), LM Studio `/api/v0/models` (`loaded_context_length`);
   vLLM and other OpenAI-compatible servers list it on `/models` itself (`max_model_len`,
   `context_length`, …) (source `"probe:<path>"`);
4. a default (source `"default"`): `DEFAULT_LOCAL_WINDOW` for local servers, whose real window is a
   runtime setting (Ollama's default is a few thousand tokens whatever the model could do, so a
   model's nominal window is not trusted there), `DEFAULT_HOSTED_WINDOW` otherwise.

Numbers outside `MIN_WINDOW..MAX_WINDOW` are ignored as nonsense. Each request is bounded as a
whole by `PROBE_TIMEOUT` (`servers.one_off_request`), however slowly a server sends its answer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopwright.endpoints.base import normalize_base_url, shown_url, with_path
from loopwright.endpoints.fixes import pass_setting
from loopwright.endpoints.pages import not_the_api
from loopwright.endpoints.resolve import PROVIDERS, Resolved, missing_key
from loopwright.endpoints.servers import (
    ServerKind,
    fetch_listing,
    forget_kind,
    known_kind,
    one_off_request,
)
from loopwright.errors import ConfigError
from loopwright.profiles.metadata import model_info
from loopwright.wire.base import ERROR_HEAD_CHARS

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
    url, mark, query = normalize_base_url(base_url).partition("?")
    head, _, last = url.rpartition("/")
    return (head if re.fullmatch(r"v\d+[a-z0-9]*", last) else url) + mark + query


def sane(value: Any) -> int | None:
    """`value` as a window if it is a plausible one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value)
    except (ValueError, OverflowError):  # text, NaN; JSON's Infinity
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
    # spaces, not `\s`: a line start's `\s*` crossed every later blank line (quadratic)
    match = re.search(r"(?m)^[ \t]*num_ctx[ \t]+(\d+)", str(data.get("parameters") or ""))
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


def _from_models(entries: list[Any], model: str) -> int | None:
    entry = _pick(entries, model, ("id", "name"))
    if entry is None:
        return None
    for key in _MODELS_FIELDS:
        window = sane(entry.get(key))
        if window is not None:
            return window
    return None


Extractor = Callable[[Any, str], int | None]


async def _ask(url: str, *, method: str, model: str, extract: Extractor, timeout: float,
               headers: dict[str, str]) -> int | bool | None:
    """The window at `url`, None when the answer holds none for `model`, False when nothing
    (or not the expected server) answered there."""
    import httpx

    try:
        reply = await one_off_request(
            url, headers=headers, timeout=timeout,
            json_body={"model": model} if method == "POST" else None)
        if reply.status_code in (401, 403):  # that server, but not for this key: it is
            return None  # still the kind it was: not forgotten
        if reply.status_code != 200:
            return False
        data = reply.json()
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError, RecursionError):
        return False  # (a timeout is an OSError; a reply nested too deep to decode, recursion)
    if not isinstance(data, dict):
        return False
    try:
        return extract(data, model)
    except (AttributeError, TypeError):
        return False  # an unexpected shape: this server is not what the path suggested


# each kind's own window endpoints (at the server root), asked at once, the first that answers
# wins; kinds not listed give their window on `/models` itself
_KIND_PROBES: dict[ServerKind, tuple[tuple[str, str, Extractor], ...]] = {
    "ollama": (("/api/ps", "GET", _from_ollama_ps), ("/api/show", "POST", _from_ollama_show)),
    "llamacpp": (("/props", "GET", _from_llamacpp_props),),
    "lmstudio": (("/api/v0/models", "GET", _from_lmstudio),),
}


async def probe_server(base_url: str, model: str, *, timeout: float = PROBE_TIMEOUT,
                       headers: dict[str, str] | None = None) -> tuple[int, str] | None:
    """Ask a server for `model`'s live window: (tokens, source) or None if nothing answered.

    One `GET /models` finds the kind of server (skipped when this process knows it already),
    then that kind's own endpoints are asked."""
    sent = {k: v for k, v in (headers or {}).items() if k.lower() != "content-type"}
    kind = known_kind(base_url, sent)
    listing = None
    if kind is None or kind not in _KIND_PROBES:  # the listing is the kind's window endpoint
        listing = await fetch_listing(base_url, headers=sent, timeout=timeout)
        if listing.kind is None:
            return None
        kind = listing.kind
        if kind not in _KIND_PROBES:
            window = _from_models(list(listing.entries), model)
            return (window, "probe:/v1/models") if window is not None else None
    root = server_root(base_url)
    probes = _KIND_PROBES[kind]
    answers = await asyncio.gather(*(
        _ask(with_path(root, path), method=method, model=model, extract=extract, timeout=timeout,
             headers=sent) for path, method, extract in probes))
    if all(answer is False for answer in answers) and kind == known_kind(base_url, sent):
        forget_kind(base_url, sent)  # not that kind of server (any more): find out what answers
        if listing is None:
            return await probe_server(base_url, model, timeout=timeout, headers=headers)
    for (path, *_), window in zip(probes, answers, strict=True):
        if isinstance(window, int) and not isinstance(window, bool):
            return window, f"probe:{path}"
    return None


_ERROR_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*)"),  # OpenAI, vLLM
    # (begun only where a number begins: from every digit of a long run, quadratic)
    re.compile(r"(?<![\d,])\d[\d,]*\s*tokens?\s*>\s*(\d[\d,]*)\s*maximum"),  # Anthropic
    re.compile(r"exceed context limit: \d+ \+ \d+ > (\d+)"),  # Anthropic, with max_tokens
    re.compile(r"maximum model length of (\d[\d,]*)"),  # vLLM's decoder-prompt check
    re.compile(r"maximum prompt length is (\d[\d,]*)"),  # xAI
    re.compile(r"maximum number of tokens allowed \((\d[\d,]*)\)"),  # Google
    re.compile(r"maximum allowed input length of (\d[\d,]*)"),  # Poolside
    re.compile(r"range of input length should be \[\d{1,9}, ?(\d[\d,]*)\]"),  # DashScope
    re.compile(r"`max_new_tokens` must be <= (\d[\d,]*)"),  # TGI
    re.compile(r"`inputs` must have less than (\d[\d,]*) tokens"),  # TGI, the input alone
    re.compile(r"(?<![\d,])(\d[\d,]*) maximum context length"),  # Mistral
    # llama.cpp, others ("-4096" is no window, and no 4096 either)
    re.compile(r"context (?:size|window|length)[^\d]{0,20}(?<!-)(\d[\d,]*)"),
    re.compile(r"n_ctx\D{0,6}(?<!-)(\d+)"),
)


def window_from_error(text: str) -> int | None:
    """The window a provider names in its "prompt too long" error, if it names one."""
    lowered = text[:ERROR_HEAD_CHARS].lower()
    for pattern in _ERROR_WINDOW_PATTERNS:
        match = pattern.search(lowered)
        if match:
            found = sane(match.group(1).replace(",", ""))
            if found is not None:
                return found
    return None


# an overflow reply that names both the input and the reply's allowance (`max_tokens`) it was
# asked for (digits bounded: `int` of a long run is slow, then refused)
_ALLOWANCE_PATTERNS = (
    re.compile(r"exceed context limit: (?P<input>\d{1,9}) \+ (?P<output>\d{1,9}) >"),  # Anthropic
    # OpenAI, vLLM, and OpenRouter passing theirs on
    re.compile(r"\((?P<input>\d{1,9}) in the messages, (?P<output>\d{1,9}) in the completion\)"),
    re.compile(r"requested (?P<output>\d{1,9}) output tokens and your prompt contains at least "
               r"(?P<input>\d{1,9}) input tokens"),  # vLLM from 0.10
    re.compile(r"\((?P<input>\d{1,9}) of text input, (?:(?P<tools>\d{1,9}) of tool input, )?"
               r"(?P<output>\d{1,9}) in the output\)"),  # OpenRouter
    re.compile(r"is too large: (?P<output>\d{1,9})\. this model's maximum context length is "
               r"\d{1,9} tokens and your request has (?P<input>\d{1,9}) input tokens"),  # vLLM
    re.compile(r"given: (?P<input>\d{1,9}) `inputs` tokens and (?P<output>\d{1,9}) "
               r"`max_new_tokens`"),  # TGI
)


def allowance_overrun(text: str) -> tuple[int, int] | None:
    """(input tokens, window) when a provider's overflow reply says the input alone fits its
    window and the reply's allowance (`max_tokens`) took the request over it; else None."""
    window = window_from_error(text)
    if window is None:
        return None
    lowered = text[:ERROR_HEAD_CHARS].lower()
    for pattern in _ALLOWANCE_PATTERNS:
        match = pattern.search(lowered)
        if match:
            found = match.groupdict()
            used = int(found["input"]) + int(found.get("tools") or 0)
            asked = int(found["output"])
            return (used, window) if asked > 0 and used < window < used + asked else None
    return None


def is_local(resolved: Resolved) -> bool:
    """A server on this machine (or the local network), or a local provider (Ollama, …); a
    hosted provider (OpenAI, Anthropic, …) is never local, whatever URL stands in for it."""
    info = PROVIDERS.get(resolved.provider)
    if info is not None:
        return info.local
    return resolved.endpoint.is_local


def should_probe(resolved: Resolved) -> bool:
    """Local servers and unknown hosts are asked; well-known hosted APIs are not."""
    return is_local(resolved) or resolved.provider not in PROVIDERS


async def detect_window(resolved: Resolved, *, explicit: int | None = None,
                        timeout: float = PROBE_TIMEOUT) -> WindowInfo:
    """The context window of one resolved model (see the module docstring for the order)."""
    where = {"model": resolved.model, "provider": resolved.provider,
             "base_url": resolved.endpoint.shown_url}
    if explicit:
        return WindowInfo(tokens=int(explicit), source="explicit", **where)
    local = is_local(resolved)
    info = None if local else model_info(resolved.model)
    if info is not None:  # a hosted model the table knows: nothing to ask
        return WindowInfo(tokens=info.context_window, source="metadata", **where)
    if should_probe(resolved):
        found = await probe_server(resolved.endpoint.base_url, resolved.model, timeout=timeout,
                                   headers=resolved.endpoint.request_headers())
        if found is not None:
            return WindowInfo(tokens=found[0], source=found[1], **where)
    default = DEFAULT_LOCAL_WINDOW if local else DEFAULT_HOSTED_WINDOW
    return WindowInfo(tokens=default, source="default", **where)


async def detect_windows(chain: list[Resolved], *, explicit: int | None = None,
                         timeout: float = PROBE_TIMEOUT) -> list[WindowInfo]:
    """`detect_window` for the primary and every fallback, concurrently."""
    return list(await asyncio.gather(*(detect_window(r, explicit=explicit, timeout=timeout)
                                       for r in chain)))


PREFLIGHT_TIMEOUT = 5.0
SHOWN_ID_CHARS = 80


def _clipped(model_id: str) -> str:
    return model_id if len(model_id) <= SHOWN_ID_CHARS else model_id[:SHOWN_ID_CHARS] + "…"


async def preflight(resolved: Resolved, *, timeout: float = PREFLIGHT_TIMEOUT) -> None:
    """Check a provider before the first request: a key where a hosted provider needs one, a
    server that answers at the base URL and accepts the key, and — where the server lists its
    models — the model among them. Raises `ConfigError` with the fix in one line.

    A hosted model whose window the table knows is asked nothing: the listing would be a round
    trip to a remote API on every start, and the first model request checks the same (issue 31)."""
    info = PROVIDERS.get(resolved.provider)
    key_env = info.key_env if info else None
    base_url = resolved.endpoint.base_url
    where_shown = shown_url(base_url)
    fix = missing_key(resolved.endpoint)
    if fix:
        raise ConfigError(fix)
    if not is_local(resolved) and model_info(resolved.model) is not None:
        return
    listing = await fetch_listing(base_url, headers=resolved.endpoint.request_headers(),
                                  timeout=timeout)
    if listing.status == 0:
        reason = listing.error or "no answer"
        raise ConfigError(f"nothing answers at {where_shown} ({reason}): start the server, or pass "
                          + pass_setting("--base-url", "base_url=…") + " with its address")
    if listing.page:
        raise ConfigError(not_the_api(where_shown, listing.page))
    if listing.status in (401, 403):
        where = key_env or "LOOPWRIGHT_API_KEY"
        raise ConfigError(f"{where_shown} refused the API key (HTTP {listing.status}): check "
                          f"{where} or " + pass_setting("--api-key", "Agent(api_key=…)"))
    served = listing.ids  # empty for a server that does not list its models
    # a server listing a single model answers to any name (llama.cpp): only a list can rule out
    if len(served) > 1 and not any(_same_model(entry, resolved.model) for entry in served):
        # a listing's ids are the server's to write, of any length
        shown = ", ".join(_clipped(entry) for entry in served[:8]) + (
            ", …" if len(served) > 8 else "")
        raise ConfigError(f"model {resolved.model!r} is not served at {where_shown}; it serves "
                          f"{shown}: pass " + pass_setting("--model", "Agent(model=…)")
                          + " with one of them")
