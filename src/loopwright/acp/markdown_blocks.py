"""The block structure of Markdown as it streams, line by line, as CommonMark reads it: what
decides whether a line opens or closes a fence (HTML blocks, inside which a fence is none, list
items, whose fence ends with them, and block quotes, whose blocks are read from the text after
their markers and end with them)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
# what starts a block even in a paragraph's place (so never continues one lazily): a heading,
# a thematic break, a block quote (an HTML block and a fence are told apart on their own)
_INTERRUPTS = re.compile(r"[ ]{0,3}(?:#{1,6}(?:[ \t]|$)|(?:[-*_][ \t]*){3,}$|>)")
# what opens an HTML block (of any kind but 7), a line too far in to open one excepted
_HTML_OPENING = re.compile(r"[ ]{0,3}<")
# a block quote's marker: up to three spaces in, `>`, and one space (or a column of a tab) more
_QUOTE_MARKER = re.compile(r"[ ]{0,3}>[ ]?")
# lines that, outside a paragraph, start none: a heading, a thematic break, a link reference
# definition, indented code
_NOT_PARAGRAPH = re.compile(r"[ ]{0,3}(?:#|(?:[-*_][ \t]*){3,}$|\[[^\]]+\]:)|[ ]{4}|\t")


@dataclass
class LineState:
    """Where the scan stands in the block structure: what decides if a fence opens."""

    fence: str = ""  # the opening fence's run (```` ``` ````, `~~~~`) while inside one
    fence_column: int = 0  # where the list item holding the fence has its text (0: none)
    list_column: int = 0  # where the list item the lines are in has its text (0: none)
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
    after_paragraph = lines.paragraph
    lines.paragraph = lines.ordinary and bool(shown.strip()) and (
        lines.paragraph or not _NOT_PARAGRAPH.match(_in_item(shown, lines.list_column)))
    item = _LIST_ITEM.match(shown)
    if item is not None and after_paragraph and (
            not item.group(2) or item.group(1).strip()[:-1] not in ("", "1")):
        item = None  # an empty item, or a list numbered from other than 1, continues the text
    if item is not None:
        lines.list_column = _item_column(item)
    elif lines.item_empty and not shown.strip():
        lines.list_column = 0  # an item begins with one blank line at most: it was empty
    elif (shown.strip() and indentation(shown)[0] < lines.list_column
          and (lines.after_blank or html_started or _INTERRUPTS.match(shown))):
        # a line less indented after a blank one, or one that starts a block of its own (no
        # lazy continuation of the item's text): the list ended
        lines.list_column = 0
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
    lines.list_column, lines.item_empty = 0, False
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
    margin = lines.list_column if lines.list_column and indent >= lines.list_column else 0
    if indent - margin >= 4:
        if lines.paragraph:
            return False
        lines.list_column = lines.list_column if margin else 0  # less indented: the list ended
    else:
        item = _LIST_ITEM.match(text)
        if (item is None or item.group(2) or not text[item.end():].strip()
                or (lines.paragraph and item.group(1).strip()[:-1] not in ("", "1"))):
            return False  # (a list numbered from other than 1 does not interrupt a paragraph)
        lines.list_column = _item_column(item)
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
    page's, or the list item's the lines before opened (`- ```` on the item's own line too)."""
    line = _in_columns(line)
    item = _LIST_ITEM.match(line)
    indent = indentation(line)[0]
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


def _in_item(line: str, list_column: int) -> str:
    """`line` from the list item's margin on, when it is that far in (else as it stands)."""
    line = _in_columns(line)
    return line[list_column:] if indentation(line)[0] >= list_column else line


def _item_column(item: re.Match[str]) -> int:
    """Where a list item's text starts: after its marker and one to four spaces; one space in
    when it starts with a blank or with indented code."""
    return item.end() if item.group(2) else len(item.group(1)) + 1


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
