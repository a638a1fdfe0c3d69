"""The server's bearer token: where it comes from, and the check on every request.

The token is `--token`, else `LOOPWRIGHT_SERVE_TOKEN`, else the file `serve_token` in the user's
config dir (`~/.config/loopwright/`), written (mode 0600) with a new random token the first time
the server starts on a loopback address. A non-loopback address without a token refuses to start.

Every API route needs it: `Authorization: Bearer TOKEN`. The page itself (`/`, `/static/…`,
`/docs`, `/openapi.json`: the package's own files, nothing of the user's) opens without it, so a
browser can load it; the link the server prints carries the token in its fragment
(`/#token=…`), which a browser never sends to a server. The page trades it for a login token of
its own (`serve/logins.py`), which logging out ends; it keeps that in `sessionStorage` (one
origin's, so one port's), hands it to its new tabs over a `BroadcastChannel` (static/dom.js),
and sends it as the header on every request. No cookie holds either:
a browser sends a host's cookies to every port of it, so any other server on this host (another
user's too) would receive it. Even the page's files are refused to a request another site's page
makes (Fetch Metadata), so no other page learns that a server runs here.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.config import user_config_dir
from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from loopwright.serve.logins import PageLogins

TOKEN_ENV = "LOOPWRIGHT_SERVE_TOKEN"
TOKEN_FILENAME = "serve_token"
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_path() -> Path:
    return user_config_dir() / TOKEN_FILENAME


def server_token(host: str, explicit: str | None = None) -> tuple[str, bool]:
    """The token to require and whether it was just created (so the caller prints it)."""
    given = explicit or os.environ.get(TOKEN_ENV) or _read_token_file()
    if given:
        return _checked(given.strip()), False
    if not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without a token: give --token or set {TOKEN_ENV} "
            f"(or start once on 127.0.0.1, which writes one to {token_path()})")
    token = secrets.token_urlsafe(32)
    path = token_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another server's first start wrote it since we looked
        written = _read_token_file()
        if written is None:
            raise ConfigError(f"{path} is empty: delete it or give --token") from None
        return _checked(written), False
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token, True


def _read_token_file() -> str | None:
    path = token_path()
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:  # like ssh with a private key: a token others can read is no secret
            raise ConfigError(f"{path} can be read by other users (mode {mode:04o}): run "
                              f"chmod 600 {path}, or delete it for a new token")
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the server token: {exc}") from exc


def _checked(token: str) -> str:
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not token.isprintable() or \
            " " in token:
        raise ConfigError(f"the server token must be at least {MIN_TOKEN_CHARS} printable ASCII "
                          "characters without spaces")
    return token


PAGE_FILES = ("/", "/docs", "/openapi.json")
"""Paths that open without the token (with everything under `/static/`): they hold no data."""
OLD_COOKIE = b"loopwright_token"
"""The name (with `_PORT` after it) under which versions before the fragment link kept the
token: the page's response deletes it, as it went to every other server of the host."""


PAGE_LOGIN_KEY = "loopwright.page_login"
"""Where a request made with a page's login token carries its `PageLogin` (absent: the server's
own token)."""


class TokenAuth:
    """ASGI middleware: refuse (401) every request without the token (or, given `logins`, a
    page's live login token) but the page's own files."""

    def __init__(self, app: ASGIApp, token: str, logins: PageLogins | None = None) -> None:
        self.app = app
        self._token = token.encode()
        self._logins = logins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # none are served: refused before anything reads it
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        send = _without_referer(send)
        headers = dict(scope["headers"])
        given = _bearer(headers.get(b"authorization", b""))
        if self._matches(given):
            await self.app(scope, receive, send)
            return
        login = self._logins.find(given) if self._logins is not None and given else None
        if login is not None:
            await login.serve(self.app, {**scope, PAGE_LOGIN_KEY: login}, receive, send)
            return
        if scope["method"] in ("GET", "HEAD") and _is_page_file(scope["path"]) and \
                _asked_by_this_origin(headers):
            old = _old_login_cookies(scope["headers"])
            await self.app(scope, receive, _deleting_cookies(send, old) if old else send)
            return
        await _refuse(send, headers)

    def _matches(self, given: bytes | None) -> bool:
        return given is not None and hmac.compare_digest(given, self._token)


def _is_page_file(path: str) -> bool:
    return path in PAGE_FILES or path.startswith("/static/")


def _without_referer(send: Send) -> Send:
    """`send` that adds `Referrer-Policy: no-referrer` to every response: the page's links and
    requests never carry its address on (an old `?token=` link's, for one)."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []),
                                              (b"referrer-policy", b"no-referrer")]}
        await send(message)

    return sending


def _deleting_cookies(send: Send, names: list[bytes]) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            expired = [(b"set-cookie", name + b"=; Max-Age=0; Path=/") for name in names]
            message = {**message, "headers": [*message.get("headers", []), *expired]}
        await send(message)

    return sending


def _bearer(header: bytes) -> bytes | None:
    scheme, _, value = header.partition(b" ")
    return value.strip() if scheme.lower() == b"bearer" and value.strip() else None


def _asked_by_this_origin(headers: dict[bytes, bytes]) -> bool:
    """Whether the browser says (Fetch Metadata) a request comes from this server's own page, the
    address bar or a link followed to a page. Whether a script or image of another page loaded
    would tell that page a server runs here. Clients that send no such header are not
    browsers."""
    site = headers.get(b"sec-fetch-site")
    if site is None or site in (b"same-origin", b"none"):
        return True
    return (headers.get(b"sec-fetch-mode") == b"navigate"
            and headers.get(b"sec-fetch-dest") == b"document")


def _old_login_cookies(headers: list[tuple[bytes, bytes]]) -> list[bytes]:
    """The names of the old versions' login cookies the browser sent, read by hand:
    `http.cookies` gives up on the whole header at the first cookie it finds malformed
    (`prefs={"a":1}`, `flag`), and every server on this host sets cookies the browser sends
    here too."""
    names = []
    for key, value in headers:
        if key != b"cookie":
            continue
        for pair in value.split(b";"):
            name = pair.strip().partition(b"=")[0]
            if name.startswith(OLD_COOKIE) and name.replace(b"_", b"").isalnum():
                names.append(name)
    return names


async def _refuse(send: Send, headers: dict[bytes, bytes]) -> None:
    body = json.dumps({"error": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                                "(the token is printed when the server starts)"}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="loopwright"'),
                            (b"content-length", str(len(body)).encode()),
                            *_closing_if_a_body_comes(headers)]})
    await send({"type": "http.response.body", "body": body})


def _closing_if_a_body_comes(headers: dict[bytes, bytes]) -> list[tuple[bytes, bytes]]:
    """`Connection: close` for a refused request with a body: it is never read, and uvicorn
    would go on reading and dropping it for as long as the client sends."""
    length = headers.get(b"content-length", b"0").strip()
    if b"transfer-encoding" in headers or not length.isdigit() or int(length) > 0:
        return [(b"connection", b"close")]
    return []
