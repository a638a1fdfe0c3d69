"""The server's bearer token: where it comes from, and the check on every request.

The token is `--token`, else `LOOPWRIGHT_SERVE_TOKEN`, else the file `serve_token` in the user's
config dir (`~/.config/loopwright/`), written (mode 0600) with a new random token the first time
the server starts on a loopback address. A non-loopback address without a token refuses to start.

Every route needs it: `Authorization: Bearer TOKEN`. A browser cannot send that header when it
opens a page, so `GET /?token=TOKEN` (the link the server prints) sets an HttpOnly, SameSite=Strict
cookie (named for the server's port) and redirects to `/`; the cookie is accepted for GET requests
only (the page, its files, the read-only API and the event streams), and only from the page itself
or a page opened in the browser, never a request another page makes. Anything that changes state
needs the header, which the page sends from JavaScript; another site cannot make a browser send it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import stat
from pathlib import Path
from urllib.parse import quote, unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.config import user_config_dir
from loopwright.errors import ConfigError

TOKEN_ENV = "LOOPWRIGHT_SERVE_TOKEN"
TOKEN_FILENAME = "serve_token"
COOKIE_NAME = "loopwright_token"
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


class TokenAuth:
    """ASGI middleware: refuse (401) every request without the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # none are served: refused before anything reads it
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        send = _without_referer(send)
        headers = dict(scope["headers"])
        method = scope["method"]
        if self._matches(_bearer(headers.get(b"authorization", b""))):
            await self.app(scope, receive, send)
            return
        if method in ("GET", "HEAD"):
            name = _cookie_name(scope)
            if scope["path"] == "/" and self._matches(_query_token(scope["query_string"])):
                await _set_cookie_and_redirect(send, name, self._token)
                return
            cookies = b"; ".join(value for key, value in scope["headers"] if key == b"cookie")
            if self._matches(_cookie(cookies, name)) and _asked_by_this_origin(headers):
                await self.app(scope, receive, send)
                return
        await _refuse(send)

    def _matches(self, given: bytes | None) -> bool:
        return given is not None and hmac.compare_digest(given, self._token)


def _without_referer(send: Send) -> Send:
    """`send` that adds `Referrer-Policy: no-referrer` to every response: the page's links and
    requests then never carry its address (the token link's, in a browser's first request) on."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []),
                                              (b"referrer-policy", b"no-referrer")]}
        await send(message)

    return sending


def _bearer(header: bytes) -> bytes | None:
    scheme, _, value = header.partition(b" ")
    return value.strip() if scheme.lower() == b"bearer" and value.strip() else None


def _cookie_name(scope: Scope) -> str:
    """The login cookie's name on this server: a browser sends a host's cookies to every port of
    it, so servers on one host that shared a name would replace each other's logins."""
    server = scope.get("server")
    return f"{COOKIE_NAME}_{server[1]}" if server and server[1] is not None else COOKIE_NAME


def _asked_by_this_origin(headers: dict[bytes, bytes]) -> bool:
    """Whether the browser says (Fetch Metadata) a request comes from this server's own page, the
    address bar or a link followed to a page. A page on another port of this host is the same
    site, so the SameSite cookie goes along with its requests: whether they loaded or failed
    told it which sessions exist. Clients that send no such header are not browsers."""
    site = headers.get(b"sec-fetch-site")
    if site is None or site in (b"same-origin", b"none"):
        return True
    return (headers.get(b"sec-fetch-mode") == b"navigate"
            and headers.get(b"sec-fetch-dest") == b"document")


def _query_token(query: bytes) -> bytes | None:
    """The `token` of the page link's query, percent-decoded but with "+" kept: the link is
    printed as it is, and a base64 token's plus signs would be spaces to a form decoder."""
    for pair in query.split(b"&"):
        key, sep, value = pair.partition(b"=")
        if sep and key == b"token":
            return unquote_to_bytes(value)
    return None


def _cookie(header: bytes, name: str) -> bytes | None:
    """The value of cookie `name`, read by hand: `http.cookies` gives up on the whole header at
    the first cookie it finds malformed (`prefs={"a":1}`, `flag`), and every server on this host
    sets cookies the browser sends here too."""
    wanted = name.encode()
    for pair in header.split(b";"):
        key, sep, value = pair.strip().partition(b"=")
        if sep and key == wanted and value:
            return unquote_to_bytes(value)
    return None


async def _set_cookie_and_redirect(send: Send, name: str, token: bytes) -> None:
    value = quote(token, safe="")  # a token may hold ";", "," or '"', which end a cookie value
    cookie = f"{name}={value}; HttpOnly; SameSite=Strict; Path=/"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", b"/"), (b"set-cookie", cookie.encode()),
                            (b"cache-control", b"no-store"), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send) -> None:
    body = json.dumps({"error": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                                "(the token is printed when the server starts)"}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="loopwright"'),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
