"""`create_app()`: the Starlette application behind `loopwright serve`.

Starlette on uvicorn: small, asyncio-native, streaming responses for SSE, and already installed
with the MCP SDK loopwright depends on; the OpenAPI description is written by hand
(`serve/openapi.py`), so FastAPI's generator would buy nothing but another dependency.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.serve import DEFAULT_APPROVAL_TIMEOUT
from loopwright.serve.agents import AgentPool
from loopwright.serve.api import ServeApi
from loopwright.serve.approvals import WireApprovals
from loopwright.serve.auth import TokenAuth
from loopwright.serve.batches import BatchSource
from loopwright.serve.logins import PageLogins
from loopwright.serve.openapi import openapi_document
from loopwright.serve.private_paths import server_paths
from loopwright.serve.runs import KEEP_FINISHED_BYTES, RunRegistry
from loopwright.serve.sessions import SessionView
from loopwright.serve.sse import KEEPALIVE

if TYPE_CHECKING:
    from loopwright.serve.sessions import BrowsableStore
    from loopwright.store import SessionStore


@dataclass(kw_only=True)
class ServeOptions:
    """What one server runs with."""

    token: str
    agent_options: dict[str, Any]  # `Agent` keyword arguments, as the CLI flags give them
    store: SessionStore | None = None  # shared by every agent and the sessions API
    output_types: dict[str, Any] = field(default_factory=dict)
    """Typed outputs a client may ask for by name (`"output_type": "Name"` on `POST /runs`):
    name → a pydantic model, dataclass, TypedDict… (anything `Agent(output_type=)` takes)."""
    approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    leave_grace: float = 5.0  # seconds a run may go unwatched before "last client left" acts
    keepalive: float = KEEPALIVE
    keep_finished_bytes: int = KEEP_FINISHED_BYTES
    """Bytes of finished runs' event logs kept for clients to replay (the newest finished run
    always is); older runs are read from the session store."""
    batches: list[Path] = field(default_factory=list)
    """`loopwright batch` output directories (or their results.jsonl) the page shows."""


def create_app(options: ServeOptions) -> ASGIApp:
    """The ASGI app: API, page and docs; the API behind the token (`serve/auth.py`)."""
    from loopwright import __version__

    approvals = WireApprovals(timeout=options.approval_timeout, grace=options.leave_grace)
    registry = RunRegistry(leave_grace=options.leave_grace,
                           keep_finished_bytes=options.keep_finished_bytes)
    pool = AgentPool(options.agent_options, store=options.store, approvals=approvals,
                     output_types=options.output_types)
    store: BrowsableStore | None = options.store  # type: ignore[assignment]
    batches = [BatchSource.of(path) for path in options.batches]
    private = server_paths(store=options.store, workdir=options.agent_options.get("workdir"),
                           others=[batch.results.parent for batch in batches])
    api = ServeApi(pool=pool, registry=registry, approvals=approvals, store=store,
                   keepalive=options.keepalive, batches=batches, private=private,
                   sessions=SessionView(options.agent_options.get("workdir") or str(Path.cwd())))
    document = openapi_document(__version__)
    static = resources.files("loopwright.serve") / "static"
    page = (static / "index.html").read_text(encoding="utf-8")

    async def index(request: Request) -> Response:
        return HTMLResponse(page, headers={"cache-control": "no-store"})

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_page(document))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            from loopwright.endpoints.base import close_shared_client

            await registry.aclose()
            await pool.aclose()
            if options.store is not None:
                await options.store.aclose()
            await close_shared_client()

    logins = PageLogins()
    routes: list[BaseRoute] = [
        *api.routes(),
        *logins.routes(),
        Route("/", index, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(PageHeaders)])
    app.state.registry = registry
    return TokenAuth(app, options.token, logins)


PAGE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
               "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
               "frame-ancestors 'none'")
"""The Content-Security-Policy of every response: scripts, styles and images only from the
server's own files (the page has no inline script, so an injected one cannot run, and no `data:`
or `blob:` image, so none can be drawn), and no page of any other origin may frame it (its
approval buttons cannot be clickjacked)."""


class PageHeaders:
    """Adds the CSP, `X-Frame-Options: DENY` (for browsers without `frame-ancestors`),
    and `nosniff` to every response behind the token check (`Referrer-Policy` is the token
    check's own, `serve/auth.py`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["content-security-policy"] = PAGE_POLICY
                headers["x-frame-options"] = "DENY"
                headers["x-content-type-options"] = "nosniff"
            await send(message)

        await self.app(scope, receive, with_headers)


def docs_page(document: dict[str, Any]) -> str:
    """The OpenAPI document as one plain HTML page (no script, nothing fetched)."""
    rows = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            params = ", ".join(p["name"] for p in operation.get("parameters", []))
            body = operation.get("requestBody", {}).get("content", {}).get(
                "application/json", {}).get("schema", {}).get("properties", {})
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}"
                f"</code></td><td>{html.escape(operation.get('summary', ''))}</td>"
                f"<td>{html.escape(params)}</td><td>{html.escape(', '.join(body))}</td>"
                f"<td>{html.escape(', '.join(operation.get('responses', {})))}</td></tr>")
    info = document["info"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>loopwright serve API</title>"
        "<link rel='icon' href='/static/icon.svg' type='image/svg+xml'>"
        "<link rel='stylesheet' href='/static/style.css'></head><body class='docs'>"
        f"<h1>{html.escape(info['title'])} {html.escape(info['version'])}</h1>"
        f"<p>{html.escape(info['description'])} Machine-readable: "
        "<a href='/openapi.json'>/openapi.json</a>.</p><table><thead><tr><th>method</th>"
        "<th>path</th><th>what</th><th>parameters</th><th>body</th><th>statuses</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></body></html>")
