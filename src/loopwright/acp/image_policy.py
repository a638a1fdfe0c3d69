"""Which addresses an image or a tag in the editor's text may load from (the run's egress
allow-list, `safety/egress.py`'s host check), and what stands in for one that may not."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from loopwright.errors import ToolError
from loopwright.safety.egress import egress_hosts, host_allowed

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# in a tag: an address that reaches a host (any scheme, or none: `//host`, `\\host`)
_TAG_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[\\/]{2}[^\s\"'<>`,)]*"
                      r"|\b(?:https?|ftp|wss?):[^\s\"'<>`,)]*", re.IGNORECASE)
_LOCAL_SCHEMES = frozenset({"data", "file"})
_TAB_AND_NEWLINE = str.maketrans("", "", "\t\n\r")


def tag_blocked_host(tag: str, name: str, allowed: Sequence[str]) -> str | None:
    """The host off the allow-list a tag named `name` would load from ("?": one not told)."""
    if name.lower() == "a":
        return None
    decoded = html.unescape(tag).translate(_TAB_AND_NEWLINE)
    return next((host for url in _TAG_URL.findall(decoded)
                 if (host := blocked_host(url, allowed, raw_html=True)) is not None), None)


def blocked_host(destination: str, allowed: Sequence[str], *, raw_html: bool = False
                 ) -> str | None:
    """None if an image at `destination` stays on this machine or goes to an allowed host; else
    the host it would reach ("?" when none can be told: refused all the same). `raw_html`: an
    address in a tag, where a backslash escapes nothing (`\\\\host` is `//host` to a browser)."""
    address = destination if raw_html else re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", destination)
    address = html.unescape(address)
    address = address.translate(_TAB_AND_NEWLINE).strip("\x00 \x0b\x0c")
    scheme = _SCHEME.match(address)
    if scheme is None and not address.startswith(("//", "\\\\", "/\\", "\\/")):
        return None  # a path: the editor looks for it in the project
    if scheme is not None and scheme.group(1).lower() in _LOCAL_SCHEMES:
        return None
    url = address.replace("\\", "/") if scheme else "https:" + address.replace("\\", "/")
    try:
        hosts = egress_hosts(url)
    except ToolError:
        return "?"
    return next((host for host in hosts if not host_allowed(host, allowed)), None)


def placeholder(alt: str, host: str | None) -> str:
    """What stands in for a blocked image: its alt text and host as plain text, with no
    character that Markdown or HTML could make anything of (escapes do not hold in raw HTML)."""
    words = " ".join("".join(c if c.isalnum() or c in " .,-'" else " " for c in alt).split())
    shown = words[:200]
    where = f" from {''.join(c for c in host if c.isalnum() or c in '.-:')}" if host else ""
    return f"(image{where} not loaded{': ' + shown if shown else ''})"
