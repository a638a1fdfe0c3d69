"""The page's logins: a token of its own per login, which logging out ends on the server.

The printed link carries the server's token, which every client of the API uses and nothing can
take back short of restarting with another. So the page does not keep it: it trades it at once
(`POST /login`) for a login token of its own, keeps that in the tab's `sessionStorage` and hands
that to its new tabs (static/dom.js). `POST /logout` with it ends the login here: from then on
the server refuses that token, and the event streams opened with it end. A tab that still holds
it — one the browser restores with its `sessionStorage`, one handed the token by a tab that had
not yet heard of the logout — is refused at its next request and logs itself out. Logins live in
the server's memory: a restarted server has none, and every page needs the link again.
"""

from __future__ import annotations

import hashlib
import secrets

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.serve.api import error
from loopwright.serve.auth import PAGE_LOGIN_KEY

MOST_LOGINS = 256
"""Logins kept at once; a new one beyond ends the oldest (each printed link opened is one)."""
_NO_STORE = {"cache-control": "no-store"}


class PageLogin:
    """One login: its token's digest, and its requests whose answer is under way."""

    def __init__(self, digest: bytes) -> None:
        self.digest = digest
        self.ended = False
        self._answering: set[anyio.CancelScope] = set()

    async def serve(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """`app` answers the request; once the login ends, an open-ended answer (an event
        stream, which would go on for ever) is cut short, its body ended where it was. Any other
        is left to finish (a run being started, a session's JSON of a known length): it was
        asked for before the logout."""
        begun = finished = False
        with anyio.CancelScope() as answering:
            async def sending(message: Message) -> None:
                nonlocal begun, finished
                await send(message)
                if message["type"] == "http.response.start" and _open_ended(message):
                    begun = True
                    self._answering.add(answering)
                    if self.ended:
                        answering.cancel()
                elif message["type"] == "http.response.body" and not message.get("more_body"):
                    finished = True

            try:
                await app(scope, receive, sending)
            finally:
                self._answering.discard(answering)
        if answering.cancelled_caught and begun and not finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def end(self) -> None:
        self.ended = True
        for answering in list(self._answering):
            answering.cancel()


class PageLogins:
    """The live logins of one server, by their token's SHA-256 (a dictionary lookup on a digest
    tells a guesser nothing of the token)."""

    def __init__(self, most: int = MOST_LOGINS) -> None:
        self._live: dict[bytes, PageLogin] = {}  # oldest first
        self._most = most

    def start(self) -> str:
        token = secrets.token_urlsafe(32)
        login = PageLogin(_digest(token.encode()))
        self._live[login.digest] = login
        while len(self._live) > self._most:
            self.end(next(iter(self._live.values())))
        return token

    def find(self, token: bytes) -> PageLogin | None:
        return self._live.get(_digest(token))

    def end(self, login: PageLogin) -> None:
        self._live.pop(login.digest, None)
        login.end()

    def routes(self) -> list[Route]:
        return [Route("/login", self._log_in, methods=["POST"]),
                Route("/logout", self._log_out, methods=["POST"])]

    async def _log_in(self, request: Request) -> Response:
        if request.scope.get(PAGE_LOGIN_KEY) is not None:
            return error("log in with the server's token (the link `loopwright serve` "
                          "printed), not a page's", 403)
        return JSONResponse({"token": self.start()}, status_code=201, headers=_NO_STORE)

    async def _log_out(self, request: Request) -> Response:
        login = request.scope.get(PAGE_LOGIN_KEY)
        if not isinstance(login, PageLogin):
            return error("this is the server's own token, which no logout ends: restart the "
                          "server with another to retire it", 400)
        self.end(login)
        return JSONResponse({"logged_out": True}, headers=_NO_STORE)


def _open_ended(start: Message) -> bool:
    """Whether an answer has no length it must reach (a stream's): cutting it short is an end."""
    return not any(name.lower() == b"content-length" for name, _ in start.get("headers", []))


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()
