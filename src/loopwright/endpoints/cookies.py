"""The shared client's cookie jar: httpx's, read only from a response that sets a cookie.

httpx hands every response to its jar (`Cookies.extract_cookies`), which rebuilds the request
as a `urllib.request.Request` and the response's headers as an `email.message.Message` before
the standard library looks for `Set-Cookie`: ~2,450 bytecodes a model request (a tenth of
httpx's whole work for one), for nothing in the common case of a provider that sets none. A
response that sets one is read exactly as httpx reads it; the jar, and the `Cookie` header the
next request carries, are the same (docs/benchmarks.md, issue 31, eleventh session). Imported
with httpx, by the first pool the shared client opens.
"""

from __future__ import annotations

import httpx

# the two headers `http.cookiejar` reads (RFC 6265's and the obsolete RFC 2965's); h11 gives
# header names lower-cased, lowered again here for any other transport
_SETS_A_COOKIE = frozenset({b"set-cookie", b"set-cookie2"})


class SetCookiesOnly(httpx.Cookies):
    """`httpx.Cookies` that skips a response without a `Set-Cookie` header."""

    def extract_cookies(self, response: httpx.Response) -> None:
        for name, _ in response.headers.raw:
            if name.lower() in _SETS_A_COOKIE:
                super().extract_cookies(response)
                return


def keep_set_cookies_only(client: httpx.AsyncClient) -> None:
    """Give `client` (the shared client's, made by `endpoints/base.py`, empty) this jar.
    httpx's `cookies` setter copies what it is given into a plain `Cookies`, so the jar is
    swapped under it; if httpx ever renames the attribute, the assignment is left unread and
    httpx's own jar goes on doing the same work, slower."""
    client._cookies = SetCookiesOnly()
