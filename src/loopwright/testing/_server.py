"""`FakeModelServer`: a real HTTP model server on 127.0.0.1 that answers from a script.

Kept apart from `server.py` so that `python -m loopwright.testing.server` does not execute a
module the package has already imported.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
import time
from collections.abc import Awaitable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal, TypeAlias

from loopwright.testing._embeddings import EmbedFunction, bag_of_words, embeddings_payload
from loopwright.testing._http import App, HttpConnection, HttpRequest, Send, response_bytes
from loopwright.testing._render import Target, error_response, render_item
from loopwright.testing._strict import llamacpp_rejection, provider_rejection
from loopwright.testing._wire_common import RenderContext, dumps
from loopwright.testing.scripted import (
    Fault,
    Handler,
    RecordedRequest,
    Reply,
    ScriptItem,
    WireFormat,
)

logger = logging.getLogger("loopwright.testing")

Flavor: TypeAlias = Literal["openai", "ollama", "llamacpp", "lmstudio", "vllm"]
"""Which local server the fake imitates: its window probes (and, for llama.cpp, its checks)."""

_MODEL_PATHS: dict[str, WireFormat] = {
    "/chat/completions": "chat_completions",
    "/messages": "anthropic_messages",
    "/responses": "responses",
}
# Probe endpoints live at the server root, never under /v1.
_PROBES_BY_FLAVOR: dict[Flavor, frozenset[str]] = {
    "openai": frozenset({"/api/ps", "/props", "/api/v0/models"}),
    "ollama": frozenset({"/api/ps"}),
    "llamacpp": frozenset({"/props"}),
    "lmstudio": frozenset({"/api/v0/models"}),
    "vllm": frozenset(),
}
# Which context-window fields each flavor puts on its `/v1/models` entries.
_MODELS_WINDOW_FIELDS: dict[Flavor, tuple[str, ...]] = {
    "openai": ("max_model_len", "context_length"),
    "vllm": ("max_model_len",),
}
# Who owns the `/v1/models` entries, as each real server says it: how a client tells them apart.
_OWNER_BY_FLAVOR: dict[Flavor, str] = {
    "openai": "loopwright-testing",
    "ollama": "library",
    "llamacpp": "llamacpp",
    "lmstudio": "organization_owner",
    "vllm": "vllm",
}
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0


class FakeModelServer:
    """A fake model server speaking Chat Completions, Anthropic Messages and Responses.

    It answers each model request (`POST [/v1]/chat/completions`, `/messages`, `/responses`) with
    the next item of its script, rendered in the request's wire format, streamed when the request
    says `"stream": true`. It runs its own event loop on a daemon thread, so sync tests, async
    tests and subprocesses can all call it.

        with FakeModelServer([Reply("hi"), Fault.rate_limit(retry_after=1)]) as server:
            client = OpenAI(base_url=server.base_url, api_key="x")

    `flavor` decides which context-window probes answer when `context_window` is set: `"openai"`
    (a generic OpenAI-compatible server) answers all of them and lists the window on `/v1/models`;
    `"ollama"` answers only `/api/ps`, `"llamacpp"` only `/props`, `"lmstudio"` only
    `/api/v0/models`, and `"vllm"` only lists `max_model_len` on `/v1/models`. Without
    `context_window` every probe is a 404. `"llamacpp"` is also as strict as llama.cpp's server:
    a request whose history holds a tool call with arguments that are not valid JSON gets its
    HTTP 500 `Failed to parse tool call arguments as JSON: …`, before the script is consulted.
    """

    strict_default: bool = True

    def __init__(
        self,
        replies: Iterable[ScriptItem] = (),
        *,
        handler: Handler | None = None,
        repeat: bool = False,
        context_window: int | None = None,
        max_context_window: int | None = None,
        flavor: Flavor = "openai",
        model: str = "fake-model",
        port: int = 0,
        record_requests: bool = True,
        embed: EmbedFunction | None = None,
        strict: bool | None = None,
    ) -> None:
        """Create a stopped server; `start()` it or use it as a (async) context manager.

        Args:
            replies: the script, one item per model request, served in order.
            handler: instead of a script, a function choosing each answer (may be async).
            repeat: start the script over when it runs out (for benchmarks).
            context_window: the window reported by `/v1/models` and the probe endpoints.
            max_context_window: LM Studio's `max_context_length` (default: `context_window`).
            flavor: which local server to imitate for probes, see the class docstring.
            model: the model id listed by `/v1/models` and used when a request names none.
            port: the port to listen on; 0 picks a free one.
            record_requests: keep every request in `requests`; turn off for long benchmarks.
            embed: the vector `POST /v1/embeddings` returns for a text (default: a normalised
                bag of words, so texts sharing words are close).
            strict: reject what the hosted provider rejects (HTTP 400 with its message:
                `max_tokens` or a temperature for OpenAI's o-series / GPT-5, Anthropic without
                `max_tokens`, a strict `json_schema` that is not closed) and fail the `with`
                block when scripted replies were never asked for. Default:
                `FakeModelServer.strict_default` (on).
        """
        script = list(replies)
        if handler is not None and script:
            raise ValueError("give either replies or a handler, not both")
        if flavor not in _PROBES_BY_FLAVOR:
            raise ValueError(f"unknown flavor {flavor!r}; use one of {sorted(_PROBES_BY_FLAVOR)}")
        self._script = script
        self._handler = handler
        self._repeat = repeat
        self._context_window = context_window
        self._max_context_window = max_context_window or context_window
        self._flavor: Flavor = flavor
        self._model = model
        self._embed: EmbedFunction = embed or bag_of_words
        self._requested_port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._record_requests = record_requests
        self.strict = self.strict_default if strict is None else strict
        self._served = 0
        self._model_calls = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: asyncio.Server | None = None
        self._connections: set[HttpConnection] = set()
        self._port: int | None = None

    # -- script -------------------------------------------------------------------------------

    def add(self, *items: ScriptItem) -> None:
        """Append items to the script (thread-safe; works while serving)."""
        if self._handler is not None:
            raise ValueError("this server answers with a handler; it has no script to extend")
        with self._lock:
            self._script.extend(items)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, probes included, oldest first (a snapshot copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Only the model calls (chat completions, messages, responses) among `requests`."""
        return [r for r in self.requests if r.format is not None]

    @property
    def remaining(self) -> int:
        """Script items not served yet (in the current pass when `repeat` is on)."""
        with self._lock:
            if self._repeat and self._script:
                return len(self._script) - self._served % len(self._script)
            return max(0, len(self._script) - self._served)

    # -- addresses ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on (only once started)."""
        if self._port is None:
            raise RuntimeError("FakeModelServer is not started")
        return self._port

    @property
    def url(self) -> str:
        """The server root, e.g. `http://127.0.0.1:PORT` (probe endpoints live here)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The API base URL clients are configured with: `http://127.0.0.1:PORT/v1`."""
        return self.url + "/v1"

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        """Start listening on a background thread; returns the server once it accepts requests."""
        if self._thread is not None:
            raise RuntimeError("FakeModelServer is already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=_run_forever, args=(loop,), name="FakeModelServer", daemon=True
        )
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self._listen(), loop).result(_START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close the listener and every connection, and end the thread. Safe to call twice."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("stop() cannot be called from the server's own thread")
        try:
            if not loop.is_closed():
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(_STOP_TIMEOUT)
        finally:
            if not loop.is_closed():
                loop.call_soon_threadsafe(loop.stop)
            thread.join(_STOP_TIMEOUT)
            self._loop = self._thread = self._listener = None
            self._port = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            self.check_consumed()

    def check_consumed(self) -> None:
        """Strict mode: every scripted reply was asked for (a test whose run ended earlier
        than its script says would otherwise pass while testing less than it claims)."""
        if self.strict and self._handler is None and not self._repeat and self.remaining:
            raise AssertionError(
                f"FakeModelServer: {self.remaining} scripted item(s) never requested (served "
                f"{self._served} of {len(self._script)}); the run ended earlier than the script "
                "says, or pass strict=False")

    async def __aenter__(self) -> FakeModelServer:
        # Starting and stopping take about a millisecond; not worth a worker thread.
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            self.check_consumed()

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "stopped"
        return f"<FakeModelServer {where} requests={len(self._requests)}>"

    async def _listen(self) -> None:
        app: App = self._answer
        self._listener = await asyncio.get_running_loop().create_server(
            lambda: HttpConnection(app, self._connections),
            "127.0.0.1",
            self._requested_port,
            backlog=1024,
        )
        self._port = self._listener.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        for connection in list(self._connections):
            connection.abort()
        # Let the aborted transports report connection_lost, which cancels their tasks.
        await asyncio.sleep(0)

    # -- requests -----------------------------------------------------------------------------

    def _answer(self, request: HttpRequest) -> Send | Awaitable[Send]:
        """The app the HTTP layer calls for every request."""
        api_path = request.path.rstrip("/")
        if api_path.startswith("/v1/"):
            api_path = api_path[3:]
        fmt = _MODEL_PATHS.get(api_path)
        if fmt is not None:
            return self._answer_model_call(request, fmt)
        self._record(_recorded(request, None, _parse_json(request.body)))
        if api_path == "/embeddings" and request.method == "POST":
            status, payload = embeddings_payload(_parse_json(request.body), self._embed,
                                                 self._model)
            return Send(response_bytes(status, dumps(payload).encode(),
                                       keep_alive=request.keep_alive))
        if request.method != "GET":
            return _not_found(request)
        if api_path == "/models":
            return _json_response(self._models_listing(), request.keep_alive)
        probe = self._probe_answer(request.path)
        if probe is None:
            return _not_found(request)
        return _json_response(probe, request.keep_alive)

    def _answer_model_call(self, request: HttpRequest, fmt: WireFormat) -> Send | Awaitable[Send]:
        body = _parse_json(request.body)
        recorded = _recorded(request, fmt, body)
        number = self._record(recorded)
        if request.method != "POST":
            message = f"FakeModelServer: use POST for {request.path}"
            return error_response(fmt, 405, message, keep_alive=request.keep_alive)
        if not isinstance(body, dict):
            message = "FakeModelServer: the request body is not a JSON object"
            return error_response(fmt, 400, message, keep_alive=request.keep_alive)
        if self.strict and (refusal := provider_rejection(fmt, body)):
            return error_response(fmt, 400, refusal, keep_alive=request.keep_alive)
        if self._flavor == "llamacpp" and (rejection := llamacpp_rejection(fmt, body)):
            payload = dumps(rejection).encode()
            return Send(response_bytes(500, payload, keep_alive=request.keep_alive))
        target = self._target(request, fmt, body)
        if self._handler is None:
            item = self._next_scripted()
            if item is None:
                message = f"FakeModelServer: no scripted reply left for request #{number}"
                return error_response(fmt, 400, message, keep_alive=request.keep_alive)
            return render_item(item, target)
        try:
            chosen = self._handler(recorded)
        except Exception as exc:
            return _handler_failed(exc, target)
        if inspect.isawaitable(chosen):
            return _render_when_ready(chosen, target)
        return _render_chosen(chosen, target)

    def _record(self, recorded: RecordedRequest) -> int:
        """Store a request; returns its 1-based number among model requests."""
        with self._lock:
            if self._record_requests:
                self._requests.append(recorded)
            if recorded.format is not None:
                self._model_calls += 1
            return self._model_calls

    def _next_scripted(self) -> ScriptItem | None:
        with self._lock:
            if not self._script or (self._served >= len(self._script) and not self._repeat):
                return None
            item = self._script[self._served % len(self._script)]
            self._served += 1
            return item

    def _target(self, request: HttpRequest, fmt: WireFormat, body: dict[str, Any]) -> Target:
        options = body.get("stream_options")
        model = body.get("model")
        ctx = RenderContext(
            model=model if isinstance(model, str) else self._model,
            input_tokens=max(1, len(request.body) // 4),
            created=int(time.time()),
            include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        )
        stream = body.get("stream") is True
        return Target(format=fmt, stream=stream, keep_alive=request.keep_alive, ctx=ctx)

    # -- model listing and context-window probes ----------------------------------------------

    def _models_listing(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self._model,
            "object": "model",
            "created": 0,
            "owned_by": _OWNER_BY_FLAVOR[self._flavor],
        }
        if self._context_window is not None:
            for name in _MODELS_WINDOW_FIELDS.get(self._flavor, ()):
                entry[name] = self._context_window
        return {"object": "list", "data": [entry]}

    def _probe_answer(self, path: str) -> dict[str, Any] | None:
        window = self._context_window
        if window is None or path not in _PROBES_BY_FLAVOR[self._flavor]:
            return None
        if path == "/api/ps":
            return {
                "models": [{"name": self._model, "model": self._model, "context_length": window}]
            }
        if path == "/props":
            return {"default_generation_settings": {"n_ctx": window}, "total_slots": 1}
        lmstudio_entry = {
            "id": self._model,
            "object": "model",
            "type": "llm",
            "state": "loaded",
            "loaded_context_length": window,
            "max_context_length": self._max_context_window,
        }
        return {"object": "list", "data": [lmstudio_entry]}


@contextmanager
def fake_server(*replies: ScriptItem, **options: Any) -> Iterator[FakeModelServer]:
    """Run a `FakeModelServer` for the duration of a `with` block (handy in pytest fixtures).

        @pytest.fixture
        def server():
            with fake_server() as server:
                yield server

    Keyword options are those of `FakeModelServer`.
    """
    with FakeModelServer(replies, **options) as server:
        yield server


def _run_forever(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()


async def _render_when_ready(pending: Awaitable[ScriptItem], target: Target) -> Send:
    try:
        item = await pending
    except Exception as exc:
        return _handler_failed(exc, target)
    return _render_chosen(item, target)


def _render_chosen(item: object, target: Target) -> Send:
    if not isinstance(item, Reply | Fault):
        wrong = TypeError(f"handler returned {item!r}; expected a Reply or a Fault")
        return _handler_failed(wrong, target)
    return render_item(item, target)


def _handler_failed(exc: Exception, target: Target) -> Send:
    # 400, not 500: clients retry 5xx with backoff, and a broken handler should fail a test fast.
    logger.error("FakeModelServer: handler failed", exc_info=exc)
    message = f"FakeModelServer: handler raised {type(exc).__name__}: {exc}"
    return error_response(target.format, 400, message, keep_alive=target.keep_alive)


def _recorded(request: HttpRequest, fmt: WireFormat | None, body: Any) -> RecordedRequest:
    return RecordedRequest(
        method=request.method,
        path=request.path,
        query=request.query,
        headers=request.headers,
        body=body,
        format=fmt,
        raw_body=request.body,
    )


def _parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _json_response(payload: dict[str, Any], keep_alive: bool) -> Send:
    return Send(response_bytes(200, dumps(payload).encode(), keep_alive=keep_alive))


def _not_found(request: HttpRequest) -> Send:
    message = f"FakeModelServer: no route for {request.method} {request.path}"
    return error_response(None, 404, message, keep_alive=request.keep_alive)
