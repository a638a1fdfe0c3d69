"""The HTTP API's handlers: runs (start, watch, steer, cancel, approve), sessions, health.

Every answer is JSON; an error is `{"error": "one line saying what was wrong"}` with a 4xx status.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse as StarletteJSON
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from loopwright.errors import ConfigError, LoopwrightError, SessionError
from loopwright.events import safe_json
from loopwright.serve.agents import AgentPool, PoolFull
from loopwright.serve.approvals import DECISIONS, WireApprovals, answer_approval, serving
from loopwright.serve.batches import BatchSource, BatchUnreadable, batch_detail, batch_list
from loopwright.serve.limits import MAX_BODY
from loopwright.serve.private_paths import PrivatePaths
from loopwright.serve.runs import RunRegistry, ServeRun
from loopwright.serve.sessions import (
    BrowsableStore,
    SessionView,
    list_sessions,
    session_detail,
)
from loopwright.serve.sse import KEEPALIVE, FrameSource, event_stream, resume_position
from loopwright.store.rows import DamagedSession

MAX_LIST = 200  # sessions one `GET /sessions` returns at most
RUN_FIELDS = {"prompt": str, "session_id": str, "model": str, "tools": list,
               "output_type": str, "stop_when_last_client_leaves": bool}


class BadRequest(Exception):
    """A request the server refuses; `status` and a one-line message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class JSONResponse(StarletteJSON):
    """A JSON answer whatever its text holds: a run's output may hold a lone surrogate (a
    provider may send `"\\ud800"`), which UTF-8 cannot encode (the answer was a 500)."""

    def render(self, content: Any) -> bytes:
        return safe_json(json.dumps(content, ensure_ascii=False, allow_nan=False,
                                    separators=(",", ":"))).encode()


def error(message: str, status: int) -> JSONResponse:
    # the rest of a body too large is not read: uvicorn would go on reading and dropping it for
    # as long as the client sends, so the connection ends with the answer
    close = {"connection": "close"} if status == 413 else None
    return JSONResponse({"error": message}, status_code=status, headers=close)


class ServeApi:
    """The handlers, over one process's runs, agents and store."""

    def __init__(self, *, pool: AgentPool, registry: RunRegistry, approvals: WireApprovals,
                 store: BrowsableStore | None, keepalive: float = KEEPALIVE,
                 batches: list[BatchSource] | None = None,
                 private: PrivatePaths | None = None,
                 sessions: SessionView | None = None) -> None:
        self.pool = pool
        self.registry = registry
        self.approvals = approvals
        self.store = store
        self.keepalive = keepalive
        self.batches = batches or []
        self.private = private or PrivatePaths([])  # hidden from every error answer
        self.view = sessions or SessionView(None)  # and the sessions' directories from the rest

    def routes(self) -> list[Route]:
        def route(path: str, handler: Any, method: str) -> Route:
            return Route(path, _guarded(handler, self.private), methods=[method])

        return [
            route("/health", self.health, "GET"),
            route("/runs", self.list_runs, "GET"),
            route("/runs", self.start_run, "POST"),
            route("/runs/news", self.news, "GET"),
            route("/runs/{run_id}", self.show_run, "GET"),
            route("/runs/{run_id}/events", self.events, "GET"),
            route("/runs/{run_id}/steer", self.steer, "POST"),
            route("/runs/{run_id}/cancel", self.cancel, "POST"),
            # a provider's call id is any string: in the body it arrives as sent, where a URL's
            # path would turn "." and ".." (and "%2e") into dot segments the browser removes
            route("/runs/{run_id}/approvals", self.approve, "POST"),
            route("/runs/{run_id}/approvals/{call_id:path}", self.approve, "POST"),
            route("/sessions", self.sessions, "GET"),
            route("/sessions/{session_id}", self.session, "GET"),
            route("/batches", self.list_batches, "GET"),
            route("/batches/{number}", self.batch, "GET"),
        ]

    # -- runs --

    async def health(self, request: Request) -> Response:
        from loopwright import __version__

        live = sum(1 for run in self.registry.all() if not run.finished)
        return JSONResponse({"status": "ok", "version": __version__, "live_runs": live,
                             "store": self.store is not None,
                             "output_types": sorted(self.pool.output_types)})

    async def list_runs(self, request: Request) -> Response:
        return JSONResponse({"runs": [run.summary() for run in self.registry.all()]})

    async def start_run(self, request: Request) -> Response:
        body = await _json_body(request, RUN_FIELDS)
        prompt = body.get("prompt", "")
        tools = body.get("tools")
        if tools is not None and not all(isinstance(name, str) for name in tools):
            raise BadRequest("tools must be a list of tool names")
        session_id = await self._session_to_continue(body.get("session_id"))
        if not prompt.strip() and session_id is None:
            raise BadRequest("prompt is missing or empty (an empty prompt only continues a "
                             "session: give session_id)")
        try:
            agent = await self.pool.get(body.get("model"), tools, body.get("output_type"))
        except PoolFull as exc:
            raise BadRequest(str(exc), 503) from exc
        except ConfigError as exc:
            raise BadRequest(str(exc)) from exc
        run = ServeRun(model=body.get("model") or agent.settings.model, prompt=prompt,
                       output_type=body.get("output_type"),
                       stop_when_last_client_leaves=body.get("stop_when_last_client_leaves",
                                                             False))
        try:
            with serving(run):  # its approvals (and its sub-agents') ask this run's clients
                handle = await agent.start(prompt, session_id=session_id, extra_callback=run)
        except ConfigError as exc:
            raise BadRequest(str(exc)) from exc
        except LoopwrightError as exc:  # the session is busy in another process
            raise BadRequest(str(exc), 409) from exc
        run.context_window = agent.windows[0].tokens if agent.windows else None
        self.registry.add(run, handle)
        return JSONResponse({"run_id": run.id, "session_id": run.session_id,
                             "events": f"/runs/{run.id}/events",
                             "context_window": run.context_window}, status_code=201)

    async def _session_to_continue(self, prefix: str | None) -> str | None:
        if prefix is None:
            return None
        if self.store is None:
            raise BadRequest("session_id: this server keeps no sessions (store is off)")
        try:
            session_id = await self.store.resolve(prefix)
        except SessionError as exc:
            raise BadRequest(str(exc), 404) from exc
        if self.registry.live_session(session_id) is not None:
            raise BadRequest(f"session {session_id} has a live run; steer it or wait", 409)
        return session_id

    async def show_run(self, request: Request) -> Response:
        return JSONResponse(self._run(request).detail())

    async def events(self, request: Request) -> Response:
        run = self._run(request)
        return self._stream(run, _seen(request, default=0))

    async def news(self, request: Request) -> Response:
        """Runs starting and ending from now on (or after `Last-Event-ID`), as SSE."""
        news = self.registry.news
        return self._stream(news, _seen(request, default=news.frames(0)[1]))

    def _stream(self, source: FrameSource, seen: int) -> Response:
        return StreamingResponse(event_stream(source, seen, keepalive=self.keepalive),
                                 media_type="text/event-stream",
                                 headers={"cache-control": "no-cache",
                                          "x-accel-buffering": "no"})

    async def steer(self, request: Request) -> Response:
        run = self._run(request)
        text = (await _json_body(request, {"text": str})).get("text", "")
        if not text.strip():
            raise BadRequest("text is missing or empty")
        if run.handle is None or not run.handle.steer(text):
            raise BadRequest(f"run {run.id} has ended", 409)
        return JSONResponse({"steered": True}, status_code=202)

    async def cancel(self, request: Request) -> Response:
        run = self._run(request)
        if run.handle is None or not run.handle.cancel():
            raise BadRequest(f"run {run.id} has ended", 409)
        return JSONResponse({"cancelling": True}, status_code=202)

    async def approve(self, request: Request) -> Response:
        run = self._run(request)
        in_path = request.path_params.get("call_id")
        body = await _json_body(request, {"decision": str} if in_path is not None
                                else {"call_id": str, "decision": str})
        call_id = in_path if in_path is not None else body.get("call_id")
        decision = body.get("decision")
        if call_id is None:
            raise BadRequest("call_id is missing: the approval_required event's call_id")
        if decision not in DECISIONS:
            raise BadRequest(f"decision must be one of {', '.join(DECISIONS)}")
        if not answer_approval(run, call_id, decision):
            raise BadRequest(f"no approval is pending for call {call_id} of run {run.id}", 404)
        return JSONResponse({"call_id": call_id, "decision": decision})

    def _run(self, request: Request) -> ServeRun:
        run_id = request.path_params["run_id"]
        run = self.registry.get(run_id)
        if run is None:
            raise BadRequest(f"no run {run_id} in this server (finished runs are in /sessions)",
                             404)
        return run

    # -- sessions --

    async def sessions(self, request: Request) -> Response:
        params = request.query_params
        try:
            limit = min(int(params.get("limit", "50")), MAX_LIST)
        except ValueError as exc:
            raise BadRequest("limit must be a number") from exc
        if self.store is None:
            return JSONResponse({"sessions": []})
        limit, query, model = max(limit, 1), params.get("q"), params.get("model")
        damaged: list[DamagedSession] = []  # one damaged session: the rest stay browsable
        try:
            found = await list_sessions(self.store, view=self.view, limit=limit, query=query,
                                        model=model, damaged=damaged)
        except SessionError as exc:  # the store itself cannot be read (busy, unreachable)
            raise BadRequest(str(exc), 503) from exc
        if damaged:
            return JSONResponse({"sessions": found,
                                 "damaged": [one.to_dict() for one in damaged]})
        return JSONResponse({"sessions": found})

    async def session(self, request: Request) -> Response:
        if self.store is None:
            raise BadRequest("this server keeps no sessions (store is off)", 404)
        try:
            detail = await session_detail(self.store, request.path_params["session_id"],
                                          view=self.view)
        except SessionError as exc:
            raise BadRequest(str(exc), 404) from exc
        live = self.registry.live_session(detail["session"]["id"])
        detail["live_run"] = live.id if live is not None else None
        detail["context_window"] = self._window_of(detail["session"])
        return JSONResponse(detail)

    def _window_of(self, session: dict[str, Any]) -> int | None:
        """The session's context window: as its newest run here found it, else the model
        table's (None when neither knows)."""
        from loopwright.profiles.metadata import model_info

        for run in reversed(self.registry.all()):
            if run.session_id == session["id"] and run.context_window:
                return run.context_window
        info = model_info(session.get("model") or "")
        return info.context_window if info is not None else None

    # -- batches --

    async def list_batches(self, request: Request) -> Response:
        return JSONResponse({"batches": await batch_list(self.batches)})

    async def batch(self, request: Request) -> Response:
        raw = request.path_params["number"]
        if not (raw.isascii() and raw.isdigit()) or int(raw) >= len(self.batches):
            raise BadRequest(f"no batch {raw} (GET /batches lists them)", 404)
        try:
            detail = await batch_detail(self.batches[int(raw)])
        except BatchUnreadable as exc:
            raise BadRequest(str(exc), 404) from exc
        return JSONResponse({"id": int(raw), **detail})


def _seen(request: Request, *, default: int) -> int:
    """How many events the client has seen: `Last-Event-ID` or `?after=`, else `default`."""
    try:
        seen = resume_position(request.headers.get("last-event-id"),
                               request.query_params.get("after"))
    except ValueError as exc:
        raise BadRequest("Last-Event-ID / after must be a non-negative event number") from exc
    given = request.headers.get("last-event-id") or request.query_params.get("after")
    return seen if given else default


def _guarded(handler: Any, private: PrivatePaths) -> Any:
    """`handler` with `BadRequest` turned into its JSON error answer, without the server's paths
    (the store's errors name its file; the log keeps them)."""
    async def call(request: Request) -> Response:
        try:
            response: Response = await handler(request)
        except BadRequest as exc:
            # repr: a path's decoded "%0A" must not start a line of its own in the log
            context = f"{request.method} {request.url.path[:200]!r} answered {exc.status}"
            return error(private.answerable(str(exc), context), exc.status)
        return response

    call.__name__ = handler.__name__
    call.__doc__ = handler.__doc__
    return call


async def _json_body(request: Request, fields: dict[str, type]) -> dict[str, Any]:
    """The body as a JSON object whose keys are all in `fields` with values of their types."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise BadRequest(f"the body is over {MAX_BODY} bytes", 413)
    raw = b""
    try:
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise BadRequest(f"the body is over {MAX_BODY} bytes", 413)
    except ClientDisconnect as exc:  # gone, or cut off by the body deadline (serve/limits.py)
        raise BadRequest("the client left before its request body arrived", 408) from exc
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # "[[[[…" in 1 MB is far deeper than the parser recurses
        raise BadRequest("the body is not valid JSON: it is nested too deeply") from exc
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    for key, value in body.items():
        kind = fields.get(key)
        if kind is None:
            raise BadRequest(f"unknown field {key!r}; known: {', '.join(fields)}")
        if value is not None and not isinstance(value, kind):
            raise BadRequest(f"{key} must be a {_TYPE_NAMES[kind]}")
    return {key: value for key, value in body.items() if value is not None}


_TYPE_NAMES = {str: "string", list: "list", bool: "boolean", int: "number"}
