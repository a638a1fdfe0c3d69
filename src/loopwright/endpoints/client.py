"""One model behind one endpoint: a call with retries, streaming, and stream → plain fallback."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwright.endpoints.base import Endpoint, request_slot
from loopwright.endpoints.pages import is_html, not_the_api, page_extract
from loopwright.endpoints.resolve import missing_key
from loopwright.endpoints.retry import (
    RetryPolicy,
    demanded_pause,
    is_malformed_request,
    is_retryable_status,
    with_empty_reply_nudge,
)
from loopwright.errors import (
    AuthError,
    ContextOverflowError,
    EmptyReplyError,
    ProviderError,
    RateLimitPauseTooLong,
    RequestRejectedError,
    StreamError,
)
from loopwright.messages import (
    ModelRequest,
    ModelResponse,
    Usage,
    any_attachments,
    usage_plus,
)
from loopwright.profiles import Profile
from loopwright.settings import DEFAULTS
from loopwright.wire.base import ERROR_HEAD_CHARS, WireFormat, says_overflow
from loopwright.wire.sse import iter_sse
from loopwright.wire.stream import (
    DeltaListener,
    ListenerFailed,
    StreamAccumulator,
    ToolArgsListener,
)

if TYPE_CHECKING:
    import httpx

    from loopwright.events import StatusKind

# httpx is imported by the first request (endpoints/base.py says why); the functions that catch
# its errors import it where they run.

StatusListener = Callable[["StatusKind", str, dict[str, Any]], None]

# Ollama answers its overflow with a 500, TGI with a 422 (its validation errors)
_OVERFLOW_STATUSES = (400, 413, 422, 500)


class ClientReport:
    """What one client did for a call (its part of the call's `ModelCallRecord`). The client's
    names are read from it when a record is made, not written out for every call: most calls
    make none (nobody listens), and the label is an f-string."""

    __slots__ = ("attempts", "client", "error", "status", "streamed")

    def __init__(self, client: ModelClient, attempts: int, streamed: bool,
                 status: int | None = None, error: str | None = None) -> None:
        self.client = client
        self.attempts = attempts  # HTTP requests made, retries included
        self.streamed = streamed  # how the last attempt was made
        self.status = status
        self.error = error

    @property
    def label(self) -> str:
        return self.client.label

    @property
    def endpoint(self) -> str:
        """The base URL, as it may be shown (`Endpoint.shown_url`)."""
        return self.client.endpoint.shown_url

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def mode(self) -> str:
        return self.client.mode


@dataclass(kw_only=True)
class CallListeners:
    """Who hears about a call while it runs."""

    on_text: DeltaListener | None = None
    on_reasoning: DeltaListener | None = None
    on_status: StatusListener | None = None
    on_report: Callable[[ClientReport], None] | None = None  # once per client, when it is done
    on_tool_args: ToolArgsListener | None = None  # (call name, arguments fragment)


@dataclass(kw_only=True)
class ModelClient:
    """A model on an endpoint, spoken to in one wire format."""

    endpoint: Endpoint
    wire: WireFormat
    model: str
    profile: Profile = field(default_factory=Profile)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    stream_idle_timeout: float = DEFAULTS.stream_idle_timeout
    request_timeout: float = DEFAULTS.request_timeout
    http_client: httpx.AsyncClient | None = None  # the user's own; None: the shared one

    @property
    def mode(self) -> str:
        return self.wire.mode

    @property
    def label(self) -> str:
        return f"{self.endpoint.name or self.endpoint.shown_url} {self.model} ({self.mode})"

    async def call_opening(self) -> str:
        """How a native call begins in the model's chat template (`Profile.call_opening`), when
        this server continues a reply begun for the model and reads the call it completes:
        llama.cpp's does, in Chat Completions; "" for any other server, or when the server does
        not say what it is (one `GET /models`, kept per base URL and key)."""
        opening = self.profile.call_opening
        if not opening or self.mode != "chat_completions":
            return ""
        from loopwright.endpoints.servers import endpoint_kind, fetch_listing

        kind = endpoint_kind(self.endpoint) or (await fetch_listing(
            self.endpoint.base_url, headers=self.endpoint.request_headers())).kind
        return opening if kind == "llamacpp" else ""

    async def complete(
        self,
        request: ModelRequest,
        *,
        stream: bool = True,
        listeners: CallListeners | None = None,
    ) -> ModelResponse:
        """Call the model; retried per the policy. Raises a `ProviderError` once out of options."""
        listeners = listeners or CallListeners()
        fix = missing_key(self.endpoint)
        if fix:  # refused for certain (or, offline, a DNS failure retried for nothing)
            refused = AuthError(f"{self.label}: {fix}")
            self._report(listeners, 0, stream, refused)
            raise refused
        # what reached the listeners, for a plain call after a dead stream; a call plain from
        # the start shows each reply whole and needs none of it
        shown = _Shown(listeners) if stream else None
        if shown is not None:
            listeners = shown.listeners
        streaming = stream
        fell_back = False
        empty_retried = False
        attempt = 0
        last: ProviderError | None = None
        discarded: Usage | None = None  # replies thrown away: they still cost tokens, a request
        while attempt < self.retry.attempts:
            attempt += 1
            try:
                if streaming:
                    response = await self._call_streaming(request, listeners)
                else:
                    response = await self._call_plain(request, listeners, shown)
            except _PoolBusy:
                attempt -= 1  # a local wait for a connection: no provider attempt was made
                await asyncio.sleep(0.05)
                continue
            except StreamError as exc:
                last = exc
                discarded = usage_plus(discarded, exc.discarded_usage)
                if streaming and not fell_back:
                    fell_back, streaming = True, False
                    _notify(listeners, "retrying", f"stream failed ({exc}); retrying without "
                            "streaming", {"attempt": attempt, "fallback": "non_streaming"})
                    continue
                await self._pause_or_raise(exc, attempt, listeners, streamed=streaming)
                continue
            except ProviderError as exc:
                last = exc
                if not exc.retryable or (isinstance(exc, _HostNotFound)
                                         and attempt >= HOST_NOT_FOUND_ATTEMPTS):
                    self._report(listeners, attempt, streaming, exc)
                    raise
                await self._pause_or_raise(exc, attempt, listeners, streamed=streaming)
                continue
            if _is_empty(response):
                discarded = usage_plus(discarded, response.usage)
                if shown is None:  # plain from the start: the retry's reply is shown against
                    shown = _Shown(listeners)  # what this one showed (its reasoning)
                    shown.seen(response.message.reasoning or "", response.message.content)
                if empty_retried:
                    last = EmptyReplyError("the model returned an empty reply twice")
                    break
                empty_retried = True
                last = EmptyReplyError("the model returned an empty reply")
                await self._pause_or_raise(last, attempt, listeners, count=False,
                                           streamed=streaming)
                attempt -= 1  # the empty-reply retry is its own allowance
                request = with_empty_reply_nudge(request)
                continue
            self._report(listeners, attempt, streaming, None)
            return _delivered(request, response, discarded)
        assert last is not None
        self._report(listeners, attempt, streaming, last)
        raise self._gave_up(last, attempt, discarded)

    def _gave_up(self, last: ProviderError, attempts: int, discarded: Usage | None
                 ) -> ProviderError:
        """The error a call raises once out of attempts, carrying what its replies cost."""
        if not isinstance(last, EmptyReplyError):
            last = ProviderError(f"{self.label}: gave up after {attempts} attempts: {last}",
                                 status=last.status, body=last.body)
        last.discarded_usage = discarded or Usage()
        return last

    async def _pause_or_raise(
        self, exc: ProviderError, attempt: int, listeners: CallListeners, *, streamed: bool,
        count: bool = True,
    ) -> None:
        if count and attempt >= self.retry.attempts:
            return
        pause = exc.retry_after
        if pause is not None and pause > self.retry.max_pause:
            self._report(listeners, attempt, streamed, exc)
            raise RateLimitPauseTooLong(
                f"{self.label}: the server asked to wait {pause:.0f}s (over the "
                f"{self.retry.max_pause:.0f}s limit); try again later or use a fallback provider",
                status=exc.status,
            ) from exc
        if pause is None:
            pause = self.retry.backoff(attempt)
        _notify(listeners, "retrying", f"{exc}; retrying in {pause:.2f}s",
                {"attempt": attempt, "delay": pause, "status": exc.status})
        await asyncio.sleep(pause)

    def _report(self, listeners: CallListeners, attempts: int, streamed: bool,
                exc: Exception | None) -> None:
        if listeners.on_report is None:
            return
        if exc is None:  # (no getattr of None: a failed lookup formats an AttributeError message)
            listeners.on_report(ClientReport(self, attempts, streamed))
        else:
            listeners.on_report(ClientReport(self, attempts, streamed,
                                             getattr(exc, "status", None), str(exc)))

    async def _encode(self, request: ModelRequest, *, stream: bool) -> bytes:
        """The request body. With images or PDFs it is encoded in a worker thread: the first
        time, each file is read and base64-encoded; every later turn still joins and encodes
        megabytes (20-60 ms a turn measured for a 20 MB PDF). Without, inline: an ordinary
        request would pay a thread hop for nothing. The run awaits this call, so nothing on the
        loop edits its messages meanwhile; the thread's writes to their `wire_cache` are single
        dict stores."""
        if any_attachments(request.messages):
            return await asyncio.to_thread(self.wire.encode_body, request, stream=stream,
                                           profile=self.profile)
        return self.wire.encode_body(request, stream=stream, profile=self.profile)

    def _headers(self) -> httpx.Headers:
        return _parsed_headers(tuple(self.endpoint.request_headers().items()))

    async def _call_plain(self, request: ModelRequest, listeners: CallListeners,
                          shown: _Shown | None) -> ModelResponse:
        body = await self._encode(request, stream=False)
        try:
            url = _parsed_url(self.endpoint.url(self.wire.path))
            async with request_slot(self.http_client, url=url) as client:
                reply = await client.post(
                    url,
                    content=body,
                    headers=self._headers(),
                    timeout=_timeout(self.request_timeout),
                )
        except _httpx().PoolTimeout as exc:
            raise _PoolBusy from exc
        except _httpx().TransportError as exc:
            raise _connection_failed(self.label, self.endpoint, url.host, exc) from exc
        if reply.status_code >= 400:
            raise _http_error(self.label, self.endpoint, reply.status_code, reply.text,
                              reply.headers)
        data = self._reply_json(reply.content, reply.headers)
        if isinstance(data, dict) and data.get("error") and not data.get("choices"):
            if says_overflow(str(data["error"])):  # (a failed Responses object is one)
                raise ContextOverflowError(f"{self.label}: {data['error']}", body=reply.text)
            raise ProviderError(f"{self.label}: {data['error']}", retryable=True, body=reply.text)
        response = self.wire.parse_body(data)
        reasoning, text = response.message.reasoning or "", response.message.content
        if shown is not None:
            shown.replay(reasoning, text)
        else:
            if reasoning and listeners.on_reasoning is not None:
                listeners.on_reasoning(reasoning)
            if text and listeners.on_text is not None:
                listeners.on_text(text)
        return response

    def _reply_json(self, body: bytes, headers: Mapping[str, str]) -> Any:
        """A 2xx reply's JSON. A web page there (a web UI's address, a captive portal) will not
        turn into the API on a retry; other text might be a server's passing glitch. (The
        bytes, as httpx's `json()` reads them: its `text` works out the charset through the
        `email` package, ~60 k instructions a turn, and the headers are read only on a
        failure.)"""
        try:
            return json.loads(body)
        except ValueError as exc:
            text = body.decode("utf-8", "replace")
            if is_html(text, headers.get("content-type", "")):
                raise ProviderError(f"{self.label}: {not_the_api(self.endpoint.shown_url, text)}",
                                    status=200) from exc
            raise ProviderError(f"{self.label}: reply is not JSON: {text[:200]!r}",
                                retryable=True) from exc

    async def _call_streaming(
        self, request: ModelRequest, listeners: CallListeners
    ) -> ModelResponse:
        body = await self._encode(request, stream=True)
        acc = StreamAccumulator(on_text=listeners.on_text, on_reasoning=listeners.on_reasoning,
                                on_tool_args=listeners.on_tool_args)
        parser = self.wire.stream_parser()
        url = _parsed_url(self.endpoint.url(self.wire.path))
        try:
            async with request_slot(self.http_client, url=url) as client, client.stream(
                "POST",
                url,
                content=body,
                headers=self._headers(),
                timeout=_timeout(self.stream_idle_timeout),
            ) as reply:
                if reply.status_code >= 400:
                    text = (await reply.aread()).decode("utf-8", "replace")
                    raise _http_error(self.label, self.endpoint, reply.status_code, text,
                                      reply.headers)
                content_type = reply.headers.get("content-type", "text/event-stream")
                if "text/event-stream" not in content_type:  # a server that ignored stream=true
                    return self.wire.parse_body(self._reply_json(await reply.aread(),
                                                                 reply.headers))
                async for event, data in iter_sse(reply.aiter_bytes()):
                    acc.events_seen += 1
                    try:
                        parser.feed(event, data, acc)
                    except ListenerFailed as failed:  # not the stream's fault: not retried
                        raise failed.error from None
                    except (ValueError, KeyError, TypeError) as exc:
                        raise StreamError(f"{self.label}: malformed stream event: {data[:200]!r}",
                                          retryable=True) from exc
                    # no break on the end marker: reading the body to its end is what lets
                    # httpx return the connection to the pool for the next turn
        except _httpx().PoolTimeout as exc:
            raise _PoolBusy from exc
        except _httpx().TimeoutException as exc:
            raise _abandoned(acc, f"{self.label}: stream idle for over "
                             f"{self.stream_idle_timeout:g}s") from exc
        except _httpx().TransportError as exc:
            if acc.events_seen == 0:
                raise _connection_failed(self.label, self.endpoint, url.host, exc) from exc
            raise _abandoned(acc, f"{self.label}: stream cut: {_describe(exc)}") from exc
        except StreamError as exc:  # a malformed event, or the format's own error event
            exc.discarded_usage = exc.discarded_usage or acc.usage
            raise
        if not parser.finished and acc.finish_reason is None:
            raise _abandoned(acc, f"{self.label}: stream ended before its end marker")
        try:
            return acc.build()  # sends the text it held back (a "<thi" that never became a tag)
        except ListenerFailed as failed:
            raise failed.error from None


HOST_NOT_FOUND_ATTEMPTS = 2
"""Attempts for a host name that does not resolve: a misspelt host or no network rarely heals
within the seconds retries wait, but a resolver's passing failure (EAI_AGAIN) may. A refused
connection keeps every attempt: a local server may be starting up."""


class _HostNotFound(ProviderError):
    """The base URL's host name did not resolve."""


def _connection_failed(label: str, endpoint: Endpoint, host: str, exc: Exception
                       ) -> ProviderError:
    """A request that reached no server, retryable; a host name that did not resolve says so.
    Either names where it went (without the credentials a URL may carry)."""
    import socket

    cause: BaseException | None = exc
    for _ in range(8):  # httpx's error wraps httpcore's, which wraps the resolver's
        if cause is None or isinstance(cause, socket.gaierror):
            break
        cause = cause.__cause__ or cause.__context__
    if not isinstance(cause, socket.gaierror):
        return ProviderError(f"{label}: connection failed to {endpoint.shown_url}: "
                             f"{_describe(exc)}", retryable=True)
    return _HostNotFound(f"{label}: cannot resolve {host} ({cause.strerror}): check the base "
                         "URL's host name and the network", retryable=True)


class _PoolBusy(Exception):
    """No connection came free in time on our side (only possible when something else shares
    the pool): nothing reached the provider, so it is neither its failure nor an attempt."""


class _Shown:
    """What of this call's text already reached the listeners, so that a plain call after a
    dead stream shows only what is new — or, when it diverges, says to discard the partial."""

    def __init__(self, outer: CallListeners) -> None:
        self._outer = outer
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self.listeners = CallListeners(
            on_text=self._tee(outer.on_text, self._text),
            on_reasoning=self._tee(outer.on_reasoning, self._reasoning),
            on_status=outer.on_status,
            on_report=outer.on_report,
            on_tool_args=outer.on_tool_args,
        )

    @staticmethod
    def _tee(listener: DeltaListener | None, seen: list[str]) -> DeltaListener | None:
        if listener is None:
            return None

        def forward(delta: str) -> None:
            seen.append(delta)
            listener(delta)

        return forward

    def seen(self, reasoning: str, text: str) -> None:
        """`reasoning` and `text` reached the listeners already."""
        self._reasoning.append(reasoning)
        self._text.append(text)

    def replay(self, reasoning: str, text: str) -> None:
        """Show a whole reply: only its unseen tail if it extends what was shown."""
        old_reasoning, old_text = "".join(self._reasoning), "".join(self._text)
        fresh = reasoning.startswith(old_reasoning) and text.startswith(old_text)
        if not fresh:
            _notify(self._outer, "discard_partial", "the retried reply differs from the "
                    "partial one shown; showing it whole", {"discard_partial": True})
            old_reasoning, old_text = "", ""
            self._reasoning.clear()
            self._text.clear()
        if self.listeners.on_reasoning and len(reasoning) > len(old_reasoning):
            self.listeners.on_reasoning(reasoning[len(old_reasoning):])
        if self.listeners.on_text and len(text) > len(old_text):
            self.listeners.on_text(text[len(old_text):])


def _abandoned(acc: StreamAccumulator, message: str) -> StreamError:
    """A dead stream: retried, but what it used so far (at least one request) still counts."""
    error = StreamError(message, retryable=True)
    error.discarded_usage = acc.usage
    return error


def _notify(listeners: CallListeners, kind: StatusKind, message: str, data: dict[str, Any]) -> None:
    if listeners.on_status is not None:
        listeners.on_status(kind, message, data)


def _delivered(request: ModelRequest, response: ModelResponse, discarded: Usage | None
               ) -> ModelResponse:
    """The reply as the caller gets it: after the prefill it continued, charged for the replies
    thrown away on the way."""
    if request.prefill and not response.message.tool_calls:
        response.message.content = request.prefill + response.message.content
    if discarded is not None:
        response.usage.add(discarded)
    return response


def _is_empty(response: ModelResponse) -> bool:
    msg = response.message
    return (not msg.content.strip() and not msg.tool_calls
            and response.finish_reason not in ("length", "content_filter"))  # refusals are replies


@functools.cache
def _httpx() -> Any:
    """The httpx module, for the `except` clauses of a request: an `except` expression is
    evaluated only when something was raised, so a request that succeeds runs no import
    statement (one costs a module lookup and a check of its spec every time)."""
    import httpx

    return httpx


# Parsed once, not on every request: httpx would parse the URL string (and build the timeout)
# again per call, a noticeable part of a turn's client CPU against a fast server.
@functools.lru_cache(maxsize=256)
def _parsed_url(url: str) -> httpx.URL:
    import httpx

    return httpx.URL(url)


@functools.lru_cache(maxsize=256)
def _parsed_headers(items: tuple[tuple[str, str], ...]) -> httpx.Headers:
    import httpx

    return httpx.Headers(items)  # httpx copies it into each request, never changes it


@functools.lru_cache(maxsize=64)
def _timeout(read: float) -> httpx.Timeout:
    import httpx

    return httpx.Timeout(15.0, read=read, pool=None)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _http_error(label: str, endpoint: Endpoint, status: int, text: str,
                headers: httpx.Headers) -> ProviderError:
    """The error of an HTTP error reply, naming the server (without the credentials its URL
    may carry)."""
    detail, code = _error_detail(text, headers.get("content-type", ""))
    message = f"{label}: HTTP {status} from {endpoint.shown_url}: {detail}"
    if status in (401, 403):
        return AuthError(message + " (check the API key for this provider)", status=status,
                         body=text)
    if status in _OVERFLOW_STATUSES and (says_overflow(detail)
                                         or code == "context_length_exceeded"):  # Groq's wording
        return ContextOverflowError(message, status=status, body=text)
    head = text[:ERROR_HEAD_CHARS]
    if is_malformed_request(status, head):
        return RequestRejectedError(message, status=status, body=text)
    return ProviderError(
        message,
        status=status,
        retryable=is_retryable_status(status, head),
        body=text,
        retry_after=demanded_pause(headers),
    )


def _error_detail(text: str, content_type: str) -> tuple[str, str]:
    """An error reply's message, and the `code` of an OpenAI-style error object ("" if none)."""
    try:
        data = json.loads(text)
    except ValueError:
        if is_html(text, content_type):  # a proxy's or web server's error page
            return page_extract(text), ""
        return text[:300] or "(no body)", ""
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            code = err.get("code")
            return (str(err.get("message") or err.get("type") or err)[:300],
                    code if isinstance(code, str) else "")
        return str(err)[:300], ""
    return text[:300], ""
