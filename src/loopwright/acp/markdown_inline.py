"""Images and tags in Markdown prose, read as a CommonMark renderer reads them: each kept as
written only when it surely loads nothing from off the list, else replaced."""

from __future__ import annotations

import re
from collections.abc import Sequence

from loopwright.acp.image_policy import blocked_host, placeholder, tag_blocked_host

ATTRIBUTE = r"""(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
TAG_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)")
_TAG_END = re.compile(r"[\"'>]")
# `(url "title")` after an image's label, as CommonMark reads it (but for nested parentheses in
# the address: such an image is replaced)
_INLINE_DESTINATION = re.compile(
    r"\([ \t]*\n?[ \t]*(<[^<>\n]*>|[^\s()<][^\s()]*|)"
    r"(?:(?:[ \t]+|[ \t]*\n[ \t]*)(\"[^\"]*\"|'[^']*'|\([^()]*\)))?[ \t]*\n?[ \t]*\)")
_OPEN_ANGLE = re.compile(r"\([ \t]*\n?[ \t]*<[^<>\n]*\Z")
_REFERENCE = re.compile(r"\[[^\[\]\n]*\]")
_PARTIAL_REFERENCE = re.compile(r"\[[^\[\]\n]*")


def image_at(text: str, i: int, final: bool, allowed: Sequence[str],
             out: list[str]) -> int | None:
    """At `!`: an image kept as written, or its placeholder; where the scan goes on."""
    if text[i + 1:i + 2] != "[":
        out.append("!")
        return i + 1
    label_end = _label_end(text, i + 2)
    if label_end is None:
        if final:  # never closed: not an image, and now it cannot become one
            out.append("\\!")
            return i + 1
        return None
    label = text[i + 2:label_end]
    if text[label_end] != "]":  # a paragraph ended inside the label
        out.append(placeholder(label, None))
        return label_end
    inline = _inline_destination(text, label_end + 1, final)
    if inline is None:
        return None
    destination, end = inline
    plain_label = not any(char in label for char in "`<\\!&\n")
    host = blocked_host(destination, allowed) if destination is not None else "?"
    written = text[i:end]
    if (destination is not None and plain_label and host is None
            and written.count("<") <= written.count("](<")):
        out.append(written)  # (no `<` in it but the address's own: in raw HTML, no tag)
        return end
    if destination is None:  # `![alt][ref]`, `![alt][]`, `![alt]`: its address may come later
        reference = _REFERENCE.match(text, label_end + 1)
        if reference is None and not final and _PARTIAL_REFERENCE.fullmatch(text, label_end + 1):
            return None
        end = reference.end() if reference else label_end + 1
    out.append(placeholder(label, None if host in (None, "?") else host))
    return end


def _label_end(text: str, start: int) -> int | None:
    """The `]` closing an image label opened just before `start` (brackets nest); None if the
    text ends first. A blank line closes nothing, but then the label never closes either."""
    depth = 0
    i = start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            if depth == 0:
                return i
            depth -= 1
        elif char == "\n" and _BLANK_LINE.match(text, i):
            return i  # the paragraph ends: treated as a (broken) label, so it is replaced
        i += 1
    return None


def _inline_destination(text: str, start: int, final: bool
                        ) -> tuple[str | None, int] | None:
    """After an image's `]`: `(destination, end)` of an inline `(url "title")`, `(None,
    start)` if there is none (a reference image, or a broken one), None to wait for more."""
    if start >= len(text):
        return None if not final else (None, start)
    if text[start] != "(":
        return None, start
    if not final and _OPEN_ANGLE.match(text, start):
        return None  # `(<…` not closed yet: what it is shows at its `>`
    parsed = _INLINE_DESTINATION.match(text, start)
    if parsed is not None and not _BLANK_LINE.search(parsed.group()):
        raw = parsed.group(1)
        return (raw[1:-1] if raw.startswith("<") else raw), parsed.end()
    closing = text.find(")", start)
    if closing < 0 and not final and not _BLANK_LINE.search(text, start):
        return None
    return None, start  # not an inline image the way it is written: replaced


def tag_at(text: str, i: int, final: bool, allowed: Sequence[str], out: list[str], *,
           raw: bool) -> int | None:
    """At `<`: an HTML tag that would load something from a host off the allow-list becomes a
    placeholder; links (`<a …>`), other tags and autolinks pass. `raw`: in an HTML block that a
    blank line does not end, where a tag runs past blank lines too."""
    name = TAG_NAME.match(text, i)
    if name is None or name.end() >= len(text):
        if name is not None and not final:
            return None
        out.append("<")
        return i + 1
    if not (text[name.end()].isspace() or text[name.end()] in "/>"):
        out.append("<")  # `<https:…>` (an autolink), `<a[…`: no tag here
        return i + 1
    found = tag_end(text, name.end(), final, raw=raw)
    if found is None:
        return None
    end, closed = found
    tag = text[i:end]
    blocked = tag_blocked_host(tag, name.group(1), allowed)
    if blocked is not None:
        out.append(placeholder("", blocked if blocked != "?" else None))
        return end
    if not closed or "\n" in tag or "<" in tag[1:] or "![" in tag:
        # not surely one tag the way every renderer reads it: made none (`&lt;` is `<` to
        # Markdown and HTML alike), and the text in it is looked at as text
        out.append("&lt;")
        return i + 1
    out.append(tag)
    return end


def tag_end(text: str, start: int, final: bool, *, raw: bool) -> tuple[int, bool] | None:
    """Past the `>` that ends a tag whose name ends at `start` (`>` in quotes does not end it),
    and True; with no such `>`, the next blank line or the end (the longest the tag can be read
    to be) and False. None to wait for more."""
    blank = None if raw else _BLANK_LINE.search(text, start)
    limit = blank.start() if blank else len(text)
    end = start
    while True:
        found = _TAG_END.search(text, end, limit)
        if found is not None and found.group() == ">":
            return found.end(), True
        closing = text.find(found.group(), found.end(), limit) if found is not None else -1
        if closing < 0:
            return (limit, False) if blank is not None or final else None
        end = closing + 1
