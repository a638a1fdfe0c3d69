"""The egress policy: which hosts a tool may send anything to.

Every tool that reaches the network passes here: `web_fetch` for its URL and for every redirect,
and any tool that declares network use (`@tool(network=True)`, MCP tools that do not say they
stay in a closed world) for each URL in its arguments (any scheme, glued to a word or not, and
a destination argument's value written without one: `urls_in`). A URL's query is as good a
channel as a request body, so *reaching* a host is what needs leave, whatever the method.

A host on the allow-list (`egress_allow`: the user's config, or a trusted project's) goes
through. Any other host is asked about once per host and session through the run's approval
path (terminal, page, library callback) with the full URL shown; a yes holds for that host for
the session, a no for the rest of the run ("never": for the session). `approve_all` (`--yes`)
does not answer this question: a blanket yes to commands is no yes to sending data somewhere
new. With nobody to ask (batch, non-interactive, a server run without a client) a host off the
list is refused. Which *addresses* may be reached (no loopback, private or metadata address,
after DNS and on every redirect) is `builtin/web_guard.py`'s separate check.

Allow-list entries: `example.com` (that host), `*.example.com` (its subdomains, not itself),
an IP address as written in URLs, or `*` (every host; the address checks still apply).
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from loopwright.errors import ToolError
from loopwright.safety.credentials import carries_credential
from loopwright.safety.policy import Approver
from loopwright.tools.base import ToolContext
from loopwright.tools.execute import GateDecision, PreparedCall

EGRESS_SERVICE = "egress"
"""`ToolContext.services` key: the run's `Egress`."""

# after `://`: what a URL written in text runs to
_URL_REST = re.compile(r"[^\s\"'<>`]+")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_MAX_SCHEME = 32
_MAX_NESTED = 16  # URLs in one run of text: each is as long as the rest of the run
_WEB_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
# an argument named for where it goes (`url`, `baseUrl`, `webhook_urls`, `host`): its value names
# a host without a scheme too (`evil.net/c?d=…`, `//evil.net/…`), as fetch helpers complete it
_DESTINATION_WORDS = frozenset({
    "url", "urls", "uri", "uris", "href", "link", "links", "host", "hosts", "hostname", "domain",
    "domains", "endpoint", "endpoints", "server", "servers", "origin", "webhook", "site",
    "remote"})
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")
_WHOLE_URL = re.compile(r"((?:https?|wss?|ftp):)[/\\]*(?=[^\s/\\])", re.IGNORECASE)
_TAB_AND_NEWLINE = str.maketrans("", "", "\t\n\r")
_MAX_SCANNED_CHARS = 1_000_000
# the characters IDNA 2003 maps away and IDNA 2008 keeps (UTS 46 "deviations"): ß, final
# sigma, the zero-width joiners
_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")
_DOTS = re.compile("[.\u3002\uff0e\uff61]")  # what IDNA takes for a dot between labels


def egress_host(url: str) -> str:
    """The host of `url` as the allow-list and the approval cache know it: lower case, no
    trailing dot or brackets, percent-decoding undone, international names in their ASCII
    (punycode) form so a look-alike name cannot pass for another; `ToolError` if none."""
    return egress_hosts(url)[0]


def egress_hosts(url: str) -> list[str]:
    """Every host `url` may reach, as `egress_host` spells it: one, or two where its name holds
    a character that IDNA 2003 (Python's `idna` codec, so `web_fetch`) and IDNA 2008 (WHATWG
    parsers: Node's `fetch`, browsers, so many MCP servers) read differently — `faß.example` is
    `fass.example` to one and `xn--fa-hia.example`, another domain, to the other."""
    try:
        raw = urlsplit(url.strip()).hostname
    except ValueError as exc:
        raise ToolError(f"{url!r} is not a valid URL: {exc}") from exc
    if not raw:
        raise ToolError(f"{url!r} names no host.")
    return _readings(unquote(raw).strip("[]"))


def _readings(name: str) -> list[str]:
    """`name` lower case, without a trailing dot, international labels in punycode: as IDNA
    2003 reads it, then as IDNA 2008 does where that differs (`_DEVIATIONS`)."""
    host = name.rstrip(".").lower()
    try:
        first = host.encode("idna").decode("ascii")
    except UnicodeError:
        first = host.encode("ascii", "backslashreplace").decode("ascii")
    if not any(char in _DEVIATIONS for char in host):
        return [first]
    labels = (unicodedata.normalize("NFKC", label).lower() for label in _DOTS.split(host))
    second = ".".join(label if label.isascii() else
                      "xn--" + label.encode("punycode").decode("ascii") for label in labels)
    return [first] if second == first else [first, second]


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Whether `host` (as `egress_host` gives it) is on the allow-list (whose entries may be
    written in Unicode: `bücher.example`)."""
    for entry in allowed:
        rule = entry.strip()
        wildcard = rule.startswith("*.")
        for name in _readings(rule[2:] if wildcard else rule):
            if name == "*" or (name == host and not wildcard):
                return True
            if wildcard and host.endswith("." + name) and len(host) > len(name) + 1:
                return True
    return False


@dataclass(kw_only=True)
class Egress:
    """One run's egress policy: the allow-list and the approver that asks about other hosts
    (`None`: nobody can answer, so other hosts are refused)."""

    allowed: Sequence[str] = ()
    approver: Approver | None = None
    _asking: dict[str, asyncio.Lock] = field(default_factory=dict, init=False, repr=False)
    _refused: dict[str, str] = field(default_factory=dict, init=False, repr=False)  # this run
    _credential_urls: set[str] = field(default_factory=set, init=False, repr=False)

    async def admit(self, url: str, ctx: ToolContext, *, tool: str) -> None:
        """Return when `tool` may send a request to `url`'s host (each reading of its name:
        `egress_hosts`); `ToolError` saying why not. A URL carrying a well-known credential is
        asked about every time, allowed host or not: a yes to a host is no yes to a token."""
        hosts = egress_hosts(url)
        if carries_credential(url):
            await self._admit_credential(hosts[0], url, ctx, tool)
            return
        for host in hosts:
            await self._admit_host(host, url, ctx, tool)

    async def _admit_credential(self, host: str, url: str, ctx: ToolContext, tool: str) -> None:
        if url in self._credential_urls:  # said yes to in this run (web_fetch admits twice)
            return
        allowed, why = False, "no user is available to allow it"
        if self.approver is not None:
            allowed, why = await self.approver.ask_for_call(
                f"network: send what looks like a credential to {host}", url, ctx, tool=tool,
                why_asked="a credential in the URL", blanket=False, remember=False)
        if not allowed:
            raise ToolError(
                f"refused to send a request to {host}: its URL carries what looks like a "
                f"credential (a token or key), which needs the user's yes each time, and {why}. "
                "Do not send it another way; tell the user what you wanted to send.")
        self._credential_urls.add(url)

    async def _admit_host(self, host: str, url: str, ctx: ToolContext, tool: str) -> None:
        if host_allowed(host, self.allowed):
            return
        # two calls of one batch to one new host ask once: the second waits for the answer
        lock = self._asking.setdefault(host, asyncio.Lock())
        async with lock:
            why = self._refused.get(host)
            allowed = False
            if why is None:
                allowed, why = await self._ask(host, url, ctx, tool)
                if not allowed:
                    self._refused[host] = f"{why} (asked earlier in this run)"
        if not allowed:
            raise ToolError(
                f"refused to connect to {host}: it is not on the egress allow-list and {why}. "
                "Do not try to reach it another way; tell the user which host you needed (they "
                "can add it to egress_allow).")

    async def _ask(self, host: str, url: str, ctx: ToolContext, tool: str) -> tuple[bool, str]:
        if self.approver is None:
            return False, "no user is available to allow it"
        action = f"network: send a request to {host} (a host not on the egress allow-list)"
        return await self.approver.ask_for_call(action, url, ctx, tool=tool,
                                                why_asked=f"new host {host}", blanket=False,
                                                remember=True)


def egress_for(ctx: ToolContext) -> Egress:
    """The run's egress policy; outside an agent run, one that refuses every host."""
    found = ctx.services.get(EGRESS_SERVICE)
    return found if isinstance(found, Egress) else Egress()


def urls_in(value: Any) -> Iterator[str]:
    """Every URL written in a tool call's arguments (nested lists and tables included);
    `ToolError` when they are longer than can be checked (`_MAX_SCANNED_CHARS`): a URL past the
    limit must not pass unseen."""
    budget = [_MAX_SCANNED_CHARS]

    def walk(item: Any, destination: bool = False) -> Iterator[str]:
        if isinstance(item, str):
            budget[0] -= len(item)
            if budget[0] < 0:
                raise ToolError(
                    f"the arguments are too large to check for the addresses they name (over "
                    f"{_MAX_SCANNED_CHARS:,} characters); send less at once")
            yield from _written_urls(item)
            whole = _as_browsers_read(item)
            if whole is not None:
                yield whole
            elif destination:
                yield from _schemeless(item)
        elif isinstance(item, dict):
            for key, nested in item.items():
                yield from walk(key)
                yield from walk(nested, isinstance(key, str) and _names_destination(key))
        elif isinstance(item, list | tuple):
            for nested in item:
                yield from walk(nested, destination)

    seen: set[str] = set()
    for url in walk(value):
        if url not in seen:
            seen.add(url)
            yield url


def _written_urls(text: str, decoded: int = 0) -> Iterator[str]:
    """The URLs written in `text`, any scheme (`git://`, `ssh://` and `s3://` reach hosts too),
    glued to a word or not (Slack makes `_https://…_` an italic link and unfurls it from its
    own servers), `://host` alone read as http; not one that names no host in a scheme that
    needs none (`file:///tmp/a.txt`). A URL nested in another (`?to=https://…`, percent-encoded
    up to twice, or in the path of a service that fetches it) counts on its own: an open
    redirect or a fetching proxy on an allowed host sends it on. Found from each `://` (a
    regular expression starting at every letter took a second on a long word)."""
    start = 0
    while (first := text.find("://", start)) != -1:
        rest = _URL_REST.match(text, first + 3)
        if rest is None:
            start = first + 3
            continue
        end = start = rest.end()
        at, nested = first, 0
        while at != -1:  # each `://` of this run starts a URL running to the run's end
            nested += 1
            if nested > _MAX_NESTED:
                raise ToolError(f"an argument nests more than {_MAX_NESTED} URLs in one; "
                                "too many to check for the addresses they name")
            yield from _url_at(text, at, end)
            at = text.find("://", at + 3, end)
        run = text[first:end]
        if decoded < 2 and "%" in run:
            plain = unquote(run)
            if plain != run:
                yield from _written_urls(plain, decoded + 1)


def _url_at(text: str, at: int, end: int) -> Iterator[str]:
    """The URL whose `://` is at `at` and which ends at `end`, with its scheme read backwards
    (a letter first: `1https` is `https`), also as a browser reads a backslash in it."""
    if end <= at + 3:
        return
    begin = at
    while begin > 0 and at - begin < _MAX_SCHEME and text[begin - 1] in _SCHEME_CHARS:
        begin -= 1
    while begin < at and not (text[begin].isascii() and text[begin].isalpha()):
        begin += 1
    scheme = text[begin:at].lower() or "http"
    url = f"{scheme}://{text[at + 3:end]}"
    if scheme in _WEB_SCHEMES or _host_of(url):
        yield url
    if scheme in _WEB_SCHEMES and "\\" in url:  # as a browser reads it: `\` is `/`
        yield url.replace("\\", "/")


def _schemeless(value: str) -> Iterator[str]:
    """`value` of a destination argument written without a scheme (`evil.net/c?d=…`,
    `//evil.net/…`, `evil.net:8080`) as the http URL a fetch helper makes of it, when it names
    a host (a dot or a colon in it: a bare word is a name, a branch, a remote)."""
    if "://" in value or not value.strip() or any(char.isspace() for char in value.strip()):
        return
    url = "http://" + value.strip().lstrip("/\\")
    host = _host_of(url)
    if host == "?" or (host and ("." in host or ":" in host or host == "localhost")):
        yield url


def _host_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return "?"  # unparsable: judged (and refused) as it is


def _names_destination(key: str) -> bool:
    """Whether an argument's name says where it goes: `url`, `baseUrl`, `webhook_urls`…"""
    words = _NOT_ALPHANUMERIC.split(_CAMEL_HUMP.sub("_", key).lower())
    return any(word in _DESTINATION_WORDS for word in words)


def _as_browsers_read(text: str) -> str | None:
    """A value that is a URL as a whole, as a WHATWG parser (Node's `URL` and `fetch`, a
    browser) reads it: leading and trailing controls and spaces trimmed, tabs and newlines
    dropped, any number of slashes after the scheme, a backslash taken for a slash. There
    `https://allowed.example<TAB>.evil.net/` and `https://evil.net<BACKSLASH>@allowed.example/`
    name `evil.net`, where the text scan and Python's `urlsplit` see `allowed.example`. None
    for any other value."""
    trimmed = text.strip("".join(map(chr, range(33)))).translate(_TAB_AND_NEWLINE)
    found = _WHOLE_URL.match(trimmed)
    if found is None:
        return None
    return f"{found.group(1)}//{trimmed[found.end():]}".replace("\\", "/")


@dataclass(kw_only=True)
class EgressGate:
    """A `ToolGate`: a tool that declares network use may run only when every host named in
    its arguments is admitted. (`web_fetch` admits each redirect itself as it follows it.)"""

    egress: Egress

    async def __call__(self, prepared: PreparedCall, ctx: ToolContext) -> GateDecision | None:
        if not prepared.tool.network:
            return None
        try:
            for url in urls_in(prepared.arguments):
                await self.egress.admit(url, ctx, tool=prepared.tool.name)
        except ToolError as exc:
            return GateDecision(allow=False, reason=str(exc))
        return None
