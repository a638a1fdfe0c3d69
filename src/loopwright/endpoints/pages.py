"""Web pages where an API reply was expected: a web UI's address, a captive portal, a proxy's
error page. They are shown by their title (or first line of text), never as kilobytes of
markup."""

from __future__ import annotations

import html
import re

from loopwright.endpoints.fixes import pass_setting

# Each search stops at the next "<" from where it began: one that may run on to the end of the
# page from every unclosed tag takes quadratic time on a page of them (a hostile server's).
_TITLE = re.compile(r"<title[^<>]*>([^<]*)</title\s*>", re.IGNORECASE)
_UNSEEN_START = re.compile(r"<(script|style|head)\b", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]*>")
EXTRACT_LENGTH = 120


def is_html(text: str, content_type: str = "") -> bool:
    """True for a web page: by its content type, else by how it begins."""
    if "html" in content_type.lower():
        return True
    return text.lstrip()[:100].lower().startswith(("<!doctype html", "<html"))


def page_extract(text: str) -> str:
    """A page in a few words: its title, else its first line of visible text."""
    match = _TITLE.search(text)
    visible = match.group(1) if match else _TAG.sub("\n", _without_unseen(text))
    line = next((" ".join(part.split()) for part in html.unescape(visible).splitlines()
                 if part.strip()), "")
    if not line:
        return "an empty page"
    return line if len(line) <= EXTRACT_LENGTH else line[:EXTRACT_LENGTH] + "…"


def not_the_api(base_url: str, text: str) -> str:
    """What to say when `base_url` answered a web page where the model API should be."""
    return (f"the server at {base_url} answered with an HTML page ({page_extract(text)!r}), "
            "not the model API: check the address — an OpenAI-compatible API usually lives "
            "under /v1 (pass " + pass_setting("--base-url http://HOST:PORT/v1",
                                              'base_url="http://HOST:PORT/v1"') + ")")


def _without_unseen(text: str) -> str:
    """`text` without its script, style and head blocks (an unclosed one runs to the end)."""
    lowered = text.lower()
    kept: list[str] = []
    at = 0
    while (start := _UNSEEN_START.search(text, at)) is not None:
        kept.append(text[at:start.start()])
        close = lowered.find(f"</{start.group(1).lower()}", start.end())
        if close < 0:
            return "".join(kept)
        end = text.find(">", close)
        at = len(text) if end < 0 else end + 1
    kept.append(text[at:])
    return "".join(kept)
