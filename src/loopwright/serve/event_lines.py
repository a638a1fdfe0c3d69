"""The run's events as their outside consumers take them (`loopwright run --json`, `serve`'s SSE,
the terminal, an ACP editor): one line of JSON that is safe to write anywhere, and which statuses
start a model call's reply anew.

`event_to_json` writes text as it is (`ensure_ascii=False`); here what no terminal or encoding
should get raw — C1 controls (U+009B is a CSI to a terminal that reads C1), lone surrogates (a
provider may send `"\\ud800"`, and no encoding can write one) and the line separators JavaScript
splits at — is written as a `\\uXXXX` escape instead. Such a character can only stand inside a JSON
string, so the line stays the same JSON.
"""

from __future__ import annotations

import re

from loopwright.events import Event, event_to_json

_RAW_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def event_line(event: Event) -> str:
    """`event` as one line of JSON with nothing in it a terminal obeys or UTF-8 cannot encode."""
    return safe_json(event_to_json(event))


def safe_json(text: str) -> str:
    """JSON text (as `json.dumps(…, ensure_ascii=False)` writes it) with what a terminal obeys
    or UTF-8 cannot encode written as escapes: the same JSON."""
    if text.isascii():  # the common case, at C speed
        return text
    return _RAW_UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


REPLY_ANEW = frozenset({"fallback", "discard_partial"})
"""The statuses after which a model call's reply streams again from its start — a fallback
model's, or a retry's that differs from what broke off: what the broken one showed is not part
of it (the page's timeline.js keeps the same list)."""
