"""The block structure of Markdown as it streams, line by line, as CommonMark reads it: what
decides whether a line opens or closes a fence (HTML blocks, inside which a fence is none, list
items, whose fence ends with them, and block quotes, whose blocks are read from the text after
their markers and end with them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from loopwright.acp.markdown_inline import ATTRIBUTE

_FENCE = re.compile(r"(`{3,}|~{3,})([^\n]*)(?:\n|$)")
_LIST_ITEM = re.compile(r"([ ]{0,3}(?:[-+*]|[0-9]{1,9}[.)]))(?:([ ]{1,4})(?=\S)|[ ]*\n?\Z|[ ]+)")
# CommonMark's HTML blocks (its kinds 1 to 7): what starts one and what ends it ("": a blank
# line); inside one a fence is not a fence, so they are told apart exactly
HTML_BLOCKS = (
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
_LONE_TAG = re.compile(  # kind 7: one whole tag alone on its line, not inside a paragraph
    rf"[ ]{{0,3}}(?:<(?!(?:pre|script|style|textarea)\b)[A-Za-z][A-Za-z0-9-]*{ATTRIBUTE}*\s*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*\s*>)[ \t]*\n?", re.IGNORECASE)
# a heading or a thematic break: a line of its own, which ends a paragraph before it
_HEADING_OR_BREAK = re.compile(r"[ ]{0,3}(?:#{1,6}(?:[ \t]|$)|(?:[-*_][ \t]*){3,}$)")
# what ends the paragraph before it in its own container and makes it a heading
_SETEXT_UNDERLINE = re.compile(r"[ ]{0,3}(?:=+|-+)[ \t]*$")
# what starts a block even in a paragraph's place (so never continues one lazily): a heading,
# a thematic break, a block quote (an HTML block and a fence are told apart on their own)
_INTERRUPTS = re.compile(_HEADING_OR_BREAK.pattern + r"|[ ]{0,3}>")
# what opens an HTML block (of any kind but 7), a line too far in to open one excepted
_HTML_OPENING = re.compile(r"[ ]{0,3}<")
# a block quote's marker: up to three spaces in, `>`, and one space (or a column of a tab) more
_QUOTE_MARKER = re.compile(r"[ ]{0,3}>[ ]?")
# lines that, outside a paragraph, start none: a heading, a thematic break, a link reference
# definition, indented code
_NOT_PARAGRAPH = re.compile(_HEADING_OR_BREAK.pattern + r"|[ ]{0,3}\[[^\]]+\]:|[ ]{4}|\t")


@dataclass
class LineState:
    """Where the scan stands in the block structure: what decides if a fence opens."""

    fence: str = ""  # the opening fence's run (```` ``` ````, `~~~~`) while inside one
    fence_column: int = 0  # where the list item holding the fence has its text (0: none)
    # where the open list items have their text, outermost first: a line's indentation is read
    # from the innermost it reaches, and ends those it does not (but for a lazy line)
    list_items: list[int] = field(default_factory=list)
    after_blank: bool = False
    item_empty: bool = False  # the line before opened a list item with no text on it
    paragraph: bool = False  # the line before was a paragraph's (an HTML block of kind 7 waits)
    ordinary: bool = True  # the current line is no fence's and no HTML block's
    shown: str = ""  # what was sent of the current line
    html_block_end: str | None = None  # "" ends at a blank line; "</pre>" … at that tag
    line_start: bool = True
    # in fenced code: the lines from one that begins an image or tag not ended (`code_line`)
    code_carry: str = ""
    # the block quotes the current line is in: those of the fence or HTML block while inside one
    # (a line with fewer markers ends it: neither continues lazily), else the line's own
    quote_depth: int = 0

    @property
    def list_column(self) -> int:
        """Where the innermost open list item has its text (0: none)."""
        return self.list_items[-1] if self.list_items else 0


def line_ended(shown: str, lines: LineState) -> None:
    """What a whole line, as sent, tells of the next: whether an HTML block starts or ends on
    it (a placeholder may have taken its tag or its end's mark), whether it is a paragraph's
    (an HTML block of kind 7 cannot start after one)."""
    shown = quote_markers(shown, lines.quote_depth)[2]
    html_started = False
    if lines.ordinary:
        end = html_block_end(shown, 0, lines.paragraph)
        lines.html_block_end = None if end and end in shown.lower() else end
        lines.ordinary = end is None
        html_started = end is not None
    elif lines.html_block_end and lines.html_block_end in shown.lower():
        lines.html_block_end = None
    indent = indentation(shown)[0]
    margin = item_margin(lines, indent)
    # the paragraph before is in the container this line reaches (else this line is lazy, or
    # ends that container)
    after_paragraph = lines.paragraph and margin == lines.list_column
    lines.paragraph = lines.ordinary and bool(shown.strip()) and (
        lines.paragraph or not _NOT_PARAGRAPH.match(shown, margin)) and not (
        _HEADING_OR_BREAK.match(shown, margin)
        or (after_paragraph and _SETEXT_UNDERLINE.match(shown, margin)))
    item = _LIST_ITEM.match(shown, margin)
    if item is not None and after_paragraph and (
            not item.group(2) or item.group(1).strip()[:-1] not in ("", "1")):
        item = None  # an empty item, or a list numbered from other than 1, continues the text
    if item is not None:
        open_item(lines, indent, _item_column(item))
    elif lines.item_empty and not shown.strip():
        del lines.list_items[-1:]  # an item begins with one blank line at most: it was empty
    elif (shown.strip() and indent < lines.list_column
          and (lines.after_blank or html_started or _INTERRUPTS.match(shown, margin))):
        # a line less indented after a blank one, or one that starts a block of its own (no
        # lazy continuation of the item's text): the items it does not reach ended
        close_items(lines, indent)
    lines.item_empty = item is not None and not shown[item.end():].strip()
    lines.after_blank = not shown.strip()


def quote_markers(line: str, most: int | None = None) -> tuple[int, int, str]:
    """The block quote markers `line` begins with (at most `most` of them): how many, how many
    of its characters they take (a tab they take a column of is left to the text), and the
    text after them with its tabs as the columns CommonMark counts (`>` then a tab: a quote
    whose text begins two columns in, so a fence may follow)."""
    columns = _in_columns(line)
    depth = at = 0
    while most is None or depth < most:
        marker = _QUOTE_MARKER.match(columns, at)
        if marker is None:
            break
        depth, at = depth + 1, marker.end()
    if not at:
        return 0, 0, columns
    chars = width = 0
    for char in line:
        width = width + 4 - width % 4 if char == "\t" else width + 1
        if width > at:
            break
        chars += 1
    return depth, chars, columns[at:]


def quote_entered(lines: LineState, depth: int, text: str) -> None:
    """A line outside any fence or HTML block begins `depth` block quotes in (`text`: what
    follows their markers, in columns): in other quotes than the line before, the list and
    paragraph there ended, but for a paragraph's lazy continuation (a line with fewer markers
    that starts no block of its own), which stays in them."""
    if depth == lines.quote_depth:
        return
    if (depth < lines.quote_depth and lines.paragraph and text.strip()
            and not _INTERRUPTS.match(text) and _LIST_ITEM.match(text) is None
            and fence_at(text, lines) is None and not _HTML_OPENING.match(text)):
        return  # a lazy line (indented code cannot interrupt a paragraph): the quotes go on
    lines.quote_depth = depth
    lines.list_items, lines.item_empty = [], False
    lines.paragraph = lines.after_blank = False


def indented_code(text: str, lines: LineState) -> bool:
    """Whether a line outside any fence or HTML block (`text`: what follows its quote markers,
    in columns) is indented code: four columns in from its container's margin (the list item's
    text, when the line is that far in) where no paragraph goes on — in a paragraph's place it
    is the paragraph's text, lazily too — or a list item whose text begins five columns or more
    after its marker (and is that code). The list and paragraph state are updated for it."""
    if not text.strip():
        return False
    indent = indentation(text)[0]
    margin = item_margin(lines, indent)
    if indent - margin >= 4:
        if lines.paragraph:
            return False
        close_items(lines, indent)  # (those it is less indented than ended)
    else:
        item = _LIST_ITEM.match(text, margin)
        if (item is None or item.group(2) or not text[item.end():].strip()
                or (lines.paragraph and item.group(1).strip()[:-1] not in ("", "1"))):
            return False  # (a list numbered from other than 1 does not interrupt a paragraph)
        open_item(lines, indent, _item_column(item))
    lines.paragraph = lines.after_blank = lines.item_empty = False
    return True


def may_be_indented_code(text: str) -> bool:
    """Whether a line whose start is all that came so far (`text`, as `indented_code` takes it)
    may yet be indented code, so that the scan waits for the rest of it."""
    item = _LIST_ITEM.match(text)
    return (indentation(text)[0] >= 4 or not text.strip()
            or (item is not None and not item.group(2)))


def fence_at(line: str, lines: LineState) -> tuple[str, int] | None:
    """The run of the fence `line` opens and the column of the list item holding it (0: none);
    None if it opens none. A fence is up to three columns in from its container's margin: the
    page's, or that of the innermost open list item the line reaches (`- ```` on the item's own
    line too)."""
    line = _in_columns(line)
    indent = indentation(line)[0]
    margin = item_margin(lines, indent)
    item = _LIST_ITEM.match(line, margin)
    if item is not None and _FENCE.match(line, item.end()):
        column, start = _item_column(item), item.end()
    elif indent - margin <= 3:
        column, start = margin, indent
    else:
        return None
    fence = _FENCE.match(line, start)
    if fence is None or (fence.group(1)[0] == "`" and "`" in fence.group(2)):
        return None
    return fence.group(1), column


def indentation(line: str) -> tuple[int, int]:
    """The columns a line's leading spaces and tabs take, a tab to the next multiple of four as
    CommonMark counts (`\t```` is indented code, not a fence, and closes none), and how many
    characters they are."""
    width = chars = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
        chars += 1
    return width, chars


def _in_columns(line: str) -> str:
    """`line` with its tabs as the spaces CommonMark counts them as, to the next multiple of
    four (`- \tx` is an item whose text is four in): what its block structure is read from."""
    return line.expandtabs(4) if "\t" in line else line


def item_margin(lines: LineState, indent: int) -> int:
    """Where the innermost open list item that a line `indent` columns in reaches has its text
    (0: none): the line's blocks are read from there."""
    return max((column for column in lines.list_items if column <= indent), default=0)


def close_items(lines: LineState, indent: int) -> None:
    """A line `indent` columns in that is no lazy one ends the list items it does not reach
    (an outer item it reaches goes on)."""
    lines.list_items = [column for column in lines.list_items if column <= indent]


def open_item(lines: LineState, indent: int, column: int) -> None:
    """A line `indent` columns in opens a list item whose text is at `column`, or a block in
    the innermost item it reaches (`column` that item's, or 0): the items it does not reach
    ended."""
    close_items(lines, indent)
    if column > lines.list_column:
        lines.list_items.append(column)


def _item_column(item: re.Match[str]) -> int:
    """Where a list item's text starts: after its marker and one to four spaces; one space in
    when it starts with a blank or with indented code."""
    return item.end() if item.group(2) else item.end(1) + 1


def html_block_end(text: str, i: int, in_paragraph: bool) -> str | None:
    """What ends the HTML block the line at `i` starts (None: it starts none)."""
    for start, end in HTML_BLOCKS:
        found = start.match(text, i)
        if found is not None:
            return end.format(*(group.lower() for group in found.groups()))
    return "" if not in_paragraph and _LONE_TAG.fullmatch(text, i, _line_end(text, i)) else None


def _line_end(text: str, i: int) -> int:
    eol = text.find("\n", i)
    return len(text) if eol < 0 else eol + 1
