"""The scan that makes Markdown inert, whole or as far as a stream's text so far can be told:
block structure from `markdown_blocks`, fenced code from `fenced_code`, images and tags in prose
from `markdown_inline`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from loopwright.acp.fenced_code import code_line
from loopwright.acp.markdown_blocks import (
    LineState,
    close_items,
    fence_at,
    html_block_end,
    indentation,
    indented_code,
    line_ended,
    may_be_indented_code,
    open_item,
    quote_entered,
    quote_markers,
)
from loopwright.acp.markdown_inline import image_at, tag_at

_SPECIAL = re.compile(r"[\n\\!<]")
_LINE_HEAD = len("   <![CDATA[")  # enough of a line to tell if it opens a fence or HTML block
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;=>?@[\\]^_`{|}~")  # ASCII punctuation but `<`


def scan(text: str, lines: LineState, *, final: bool, allowed: Sequence[str]) -> tuple[str, int]:
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
            line_ended(lines.shown + "".join(out[shown_begin:]), lines)
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
        end = (image_at(text, i, final, allowed, out) if char == "!"
               else tag_at(text, i, final, allowed, out, raw=bool(lines.html_block_end)))
        if end is None:
            break
        i = end
    lines.shown += "".join(out[shown_begin:])
    return "".join(out), i


def _line_start(text: str, i: int, lines: LineState, final: bool, out: list[str],
                allowed: Sequence[str]) -> int | None:
    """At the start of a line: pass a fenced block's line (or its opening line) through and
    return where the next line starts; `i` if the line is ordinary; None to wait for more.
    A loading tag in code is replaced all the same: a renderer that reads the blocks around
    it otherwise (an HTML block, a list) may take the line for HTML. In a block quote the
    blocks are read from the text after its markers, which are passed through as written."""
    eol = text.find("\n", i)
    line = text[i:] if eol < 0 else text[i:eol + 1]
    inside = bool(lines.fence) or lines.html_block_end is not None
    depth, chars, content = quote_markers(line, lines.quote_depth if inside else None)
    if eol < 0 and not final and (
            inside or lines.code_carry or len(content) < _LINE_HEAD or fence_at(content, lines)
            or content.lstrip(" ").startswith(("<", ">")) or may_be_indented_code(content)):
        return None  # what the line is, or what it ends, shows only once it is all there
    if inside and depth < lines.quote_depth:  # the quote ended, and the block in it with it
        lines.fence, lines.fence_column, lines.code_carry = "", 0, ""
        lines.html_block_end, inside = None, False
        depth, chars, content = quote_markers(line)
    if not inside:
        quote_entered(lines, depth, content)
    markers, rest = line[:chars], line[chars:]
    indent = indentation(content)[0]
    if lines.fence and lines.fence_column and content.strip() and indent < lines.fence_column:
        shown = code_line(rest, allowed, lines) if lines.code_carry else rest
        if shown != rest:  # a tag or image begun in the code loads from this line on, where
            out.append(markers + shown)  # a renderer that read the code as prose reads on
            return i + len(line)
        lines.fence, lines.fence_column = "", 0  # the list item ended, and the items in it
        close_items(lines, indent)
        lines.code_carry = ""
    if lines.fence:
        closing = content.strip(" \t\n")
        out.append(markers + code_line(rest, allowed, lines))
        if (indent - lines.fence_column <= 3 and closing.startswith(lines.fence)
                and set(closing) == {lines.fence[0]}):
            lines.fence, lines.paragraph, lines.code_carry = "", False, ""
        return i + len(line)
    lines.ordinary = False
    if lines.html_block_end is not None:
        if lines.html_block_end == "" and not content.strip():
            lines.html_block_end = None  # a blank line ends it; a mark, the line that has it
        return i
    if indented_code(content, lines):
        out.append(markers + code_line(rest, allowed, lines))
        return i + len(line)
    if lines.code_carry:  # indented code ended with a tag or image begun in it: it loads
        shown = code_line(rest, allowed, lines)  # from this line on, where a renderer that
        if shown != rest:  # read the code as prose reads on (as after an item's fence), and
            out.append(markers + shown)  # so may the next line: the carry goes on
            lines.paragraph, lines.after_blank = True, False  # (a paragraph's text after code)
            return i + len(line)
    opening = fence_at(content, lines)
    if opening is not None:
        lines.fence, lines.fence_column = opening
        lines.item_empty = False  # (an item whose text is this fence)
        open_item(lines, indent, lines.fence_column)  # it ends the items it does not reach
        lines.code_carry = ""
        out.append(markers + code_line(rest, allowed, lines))
        return i + len(line)
    # for this line's own raw HTML; from its end on, as the line sent tells (`line_ended`)
    lines.html_block_end = html_block_end(content, 0, lines.paragraph)
    lines.ordinary = True
    return i
