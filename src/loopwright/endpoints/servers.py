"""What answers at a base URL: one `GET /models` both lists the models a server serves and tells
which kind of server it is (Ollama, llama.cpp, LM Studio, vLLM or another OpenAI-compatible one).

Both are kept per base URL *and credentials*. A gateway lists to each key what that key may use,
and a key it refuses must hear so, not be shown another key's list (issue 31); and one gateway
URL may route one key to a llama.cpp server and another to a hosted model (LiteLLM's key
routing), so the kind one key found says nothing of what another key reaches: whether a reply's
text is read as tool calls (`review.plan`) and which window endpoints are asked hang on it. The
kind is kept for the life of the process, so a second agent with the same key (a sub-agent, the
next batch task, another `serve` run) does not ask again; a cached kind whose own window
endpoint stops answering is forgotten (`forget_kind`): another server may have taken the port.
The listing itself is kept for `FRESH_FOR` seconds only, for the checks that follow it at
start-up (the CLI's `preflight`, a model picked from the server's list). Neither cache holds a
credential: URLs are kept as shown (`shown_url`), credentials as a digest. Each keeps the
`KEPT_KEYS` URL-and-key pairs used last: a long-lived `serve` whose clients each send their own
key would otherwise keep an entry per key for ever; a key evicted only asks again.

Everything in a reply is hostile: entries that are not objects are skipped, ids must be text.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from loopwright.endpoints.base import normalize_base_url, request_slot, shown_url, with_path
from loopwright.endpoints.pages import is_html

if TYPE_CHECKING:
    import httpx

    from loopwright.endpoints.base import Endpoint

ServerKind = Literal["ollama", "llamacpp", "lmstudio", "vllm", "openai_compatible"]
MAX_REPLY_BYTES = 16_000_000
"""The longest listing or probe reply read (OpenRouter's listing of every model it routes to is
a few MB)."""
FRESH_FOR = 10.0
"""Seconds a listing is reused: long enough for start-up's checks, short enough to notice a
model loaded or unloaded later."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Listing:
    """A server's reply to `GET /models`: `status` 0 when nothing answered (`error` says why);
    `kind` None unless it answered 200 with a JSON object; `page` the web page it answered
    instead (a web UI's address, a captive portal)."""

    status: int
    error: str = ""
    page: str = ""
    entries: tuple[dict[str, Any], ...] = ()
    kind: ServerKind | None = None
    fetched_at: float = 0.0

    @property
    def ids(self) -> list[str]:
        """The model ids listed, in order."""
        return [name for entry in self.entries
                if isinstance(name := entry.get("id") or entry.get("name"), str)]


KEPT_KEYS = 256
"""How many base-URL-and-credentials pairs each cache keeps, the least recently used evicted
first: more than the keys one process's agents hold at once, not one per client of a `serve`
that has run for months."""

_CacheKey = tuple[str, str]  # the shown base URL, the credentials' digest
_Value = TypeVar("_Value")


class _Recent(Generic[_Value]):
    """A mapping of the `KEPT_KEYS` keys set or read last."""

    def __init__(self) -> None:
        self._entries: OrderedDict[_CacheKey, _Value] = OrderedDict()

    def get(self, key: _CacheKey) -> _Value | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def set(self, key: _CacheKey, value: _Value) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > KEPT_KEYS:
            self._entries.popitem(last=False)

    def pop(self, key: _CacheKey) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


_kinds: _Recent[ServerKind] = _Recent()
_listings: _Recent[Listing] = _Recent()


def credentials_digest(base_url: str, headers: Mapping[str, str]) -> str:
    """A digest of everything a request to `base_url` authenticates with: the URL as written
    (user-info, a `?key=` parameter) and every header sent (which header carries a key is the
    server's choice: `authorization`, `x-api-key`, `api-key`, a gateway's own)."""
    sent = sorted((name.lower(), value) for name, value in headers.items()
                  if name.lower() != "content-type")
    return hashlib.sha256(repr((normalize_base_url(base_url), sent)).encode()).hexdigest()


def _cache_key(base_url: str, headers: Mapping[str, str] | None) -> _CacheKey:
    url = normalize_base_url(base_url)
    return shown_url(url), credentials_digest(url, headers or {})


def known_kind(base_url: str, headers: Mapping[str, str] | None = None) -> ServerKind | None:
    """The kind found earlier in this process for this base URL with these credentials (the
    headers a request sends), if any: a kind found with other credentials is not this one's."""
    return _kinds.get(_cache_key(base_url, headers))


def endpoint_kind(endpoint: Endpoint) -> ServerKind | None:
    """`known_kind` for an endpoint as it stands now (its base URL and the headers its requests
    send), asked once per reply (`review.plan.text_call_reader`): the digest is worked out again
    only when those differ from the last time this endpoint asked (a refreshed key, a header
    changed in place), so an unchanged endpoint costs a comparison, no hashing."""
    url, headers = endpoint.base_url, endpoint.request_headers()
    kept = _endpoint_keys.get(id(endpoint))
    if kept is None or kept[0] != url or kept[1] != headers:
        if kept is None:  # (dropped with the endpoint: no credential outlives it here)
            weakref.finalize(endpoint, _endpoint_keys.pop, id(endpoint), None)
        kept = url, headers, _cache_key(url, headers)
        _endpoint_keys[id(endpoint)] = kept
    return _kinds.get(kept[2])


# by endpoint (its id, while it lives): the base URL and headers its key was made from, the key
_endpoint_keys: dict[int, tuple[str, dict[str, str], _CacheKey]] = {}


def forget_kind(base_url: str, headers: Mapping[str, str] | None = None) -> None:
    """Drop what is known about this base URL with these credentials (its kind endpoint no
    longer answers them); another key finds out for itself at its own next probe."""
    key = _cache_key(base_url, headers)
    _kinds.pop(key)
    _listings.pop(key)


def forget_all() -> None:
    """Drop everything known about every server (tests start each from a clean slate: another
    test's fake server may have had the same port)."""
    _kinds.clear()
    _listings.clear()


async def fetch_listing(base_url: str, *, headers: Mapping[str, str] | None = None,
                        timeout: float = 5.0) -> Listing:
    """`GET <base_url>/models` with these credentials (or a listing fetched with the same ones
    less than `FRESH_FOR` seconds ago); records the server's kind. Transport errors become
    `Listing(status=0)`; nothing raises."""
    import httpx

    url = normalize_base_url(base_url)
    sent = {k: v for k, v in (headers or {}).items() if k.lower() != "content-type"}
    key = _cache_key(url, sent)
    cached = _listings.get(key)
    if cached is not None and time.monotonic() - cached.fetched_at < FRESH_FOR:
        return cached
    try:
        reply = await one_off_request(with_path(url, "/models"), headers=sent, timeout=timeout)
    except TimeoutError:  # (an OSError too: first)
        return Listing(status=0, error=f"no whole answer within {timeout:g}s")
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ReplyTooLarge) as exc:
        return Listing(status=0, error=str(exc) or type(exc).__name__)
    if reply.status_code != 200:
        return Listing(status=reply.status_code)
    try:
        data = reply.json()
    except (ValueError, RecursionError):  # not JSON; nested deeper than the decoder goes
        data = None
    if not isinstance(data, dict):  # answers, but with no listing: no kind to tell
        text = reply.text
        return Listing(status=200, page=text if is_html(text, reply.headers.get(
            "content-type", "")) else "")
    listed = data.get("data") or data.get("models") or []
    entries = tuple(e for e in listed if isinstance(e, dict)) if isinstance(listed, list) else ()
    kind = kind_of(entries)
    listing = Listing(status=200, entries=entries, kind=kind, fetched_at=time.monotonic())
    _kinds.set(key, kind)
    _listings.set(key, listing)
    return listing


class ReplyTooLarge(ValueError):
    """A probe's or listing's reply longer than `MAX_REPLY_BYTES`."""


async def one_off_request(url: str, *, headers: dict[str, str], timeout: float,
                          json_body: dict[str, Any] | None = None) -> httpx.Response:
    """A request asked once (a listing, a window probe), its reply read whole: a POST of
    `json_body` when given, else a GET. `timeout` bounds the whole exchange, not each read as
    httpx's does: a server sending its answer a byte at a time would hold a run's start for as
    long as it liked; and the reply's length is bounded (`ReplyTooLarge`): read whole and
    decoded, a server's gigabytes in that time would take the process's memory. Raises what
    httpx raises, `TimeoutError` or `ReplyTooLarge`."""
    import httpx

    # kept open, an idle connection would be walked (and its socket polled) by the pool on
    # every later model request of the process
    headers = {**headers, "connection": "close"}
    async with asyncio.timeout(timeout), request_slot(url=url) as client:
        method = "GET" if json_body is None else "POST"
        async with client.stream(method, url, json=json_body, headers=headers,
                                 timeout=timeout) as reply:
            chunks, size = [], 0
            async for chunk in reply.aiter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise ReplyTooLarge(f"the reply is over {MAX_REPLY_BYTES // 1_000_000} MB")
                chunks.append(chunk)
        return httpx.Response(reply.status_code, headers=reply.headers, content=b"".join(chunks),
                              request=reply.request)


def kind_of(entries: tuple[dict[str, Any], ...]) -> ServerKind:
    """The kind of server a `/models` reply comes from, by what each server puts there:
    llama.cpp owns its entries as "llamacpp" (with `meta.n_ctx_train`), vLLM as "vllm" (with
    `max_model_len`), LM Studio as "organization_owner", Ollama by namespace ("library" for its
    own models) with `name:tag` ids."""
    owners = {str(entry.get("owned_by", "")).lower() for entry in entries}
    if "llamacpp" in owners or any(isinstance(e.get("meta"), dict)
                                   and "n_ctx_train" in e["meta"] for e in entries):
        return "llamacpp"
    if "vllm" in owners or any("max_model_len" in entry for entry in entries):
        return "vllm"
    if "organization_owner" in owners:
        return "lmstudio"
    ids = [str(entry.get("id", "")) for entry in entries]
    if "library" in owners or (ids and all(":" in name for name in ids)):
        return "ollama"
    return "openai_compatible"
