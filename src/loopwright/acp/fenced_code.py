"""Fenced code as written, but for what would load from off the list were a renderer to read
it as prose: a renderer that tells the blocks around it apart otherwise than the scan does may."""

from __future__ import annotations

import re
from collections.abc import Sequence

from loopwright.acp.image_policy import placeholder, tag_blocked_host
from loopwright.acp.markdown_blocks import HTML_BLOCKS, LineState
from loopwright.acp.markdown_inline import ATTRIBUTE, TAG_NAME, image_at, tag_end

_CODE_LOADS = re.compile(r"<[A-Za-z]|!\[")  # in fenced code: a tag, an image
_CARRY_LIMIT = 8_192
# what ends an image or tag whose opening was sent and whose rest is replaced, lest the opening
# and what follows the placeholder make one: a blank line ends an image's paragraph (a `]`
# might close a nested bracket instead); `"'>` ends a tag in a browser whether it was in a
# double-quoted value, a single-quoted one or neither (an HTML block of `<pre` or `<script`
# runs past blank lines)
_CLOSERS = {"!": "\n\n", "<": "\"'>"}
_TAG_BEGUN = re.compile(  # a tag CommonMark may still read as one once the rest of it comes
    rf"<[A-Za-z][A-Za-z0-9-]*{ATTRIBUTE}*(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*"
    r"""(?:\s*=\s*(?:[^\s"'=<>`]*|'[^']*|"[^"]*)?)?)?\s*""")
_WHOLE_TAG = re.compile(rf"<[A-Za-z][A-Za-z0-9-]*{ATTRIBUTE}*\s*/?>")
_BLOCK_TAG = re.compile(HTML_BLOCKS[0][0].pattern.removeprefix("[ ]{0,3}") + "|"
                        + HTML_BLOCKS[5][0].pattern.removeprefix("[ ]{0,3}"), re.IGNORECASE)


def code_line(line: str, allowed: Sequence[str], lines: LineState) -> str:
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
        blocked = tag_blocked_host("<x " + line, "x", allowed)
        return line if blocked is None else _CLOSERS["<"] + _CLOSERS["!"] + placeholder(
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


def _code_load(text: str, start: int, allowed: Sequence[str], *, margin: bool
               ) -> tuple[int, str | None, bool]:
    """At an image's `!` or a tag's `<` in code: where it ends (or where to look on), its
    placeholder (None if it loads nothing from off the list) and whether it runs on past the
    end of `text`. `margin`: it begins a line, where a tag may open an HTML block."""
    if text[start] == "!":
        taken: list[str] = []
        end = image_at(text, start, False, allowed, taken)
        if end is not None:
            return end, None if taken in ([text[start:end]], ["!"]) else "".join(taken), False
        # not ended: replaced as it stands if it is no image so far (as prose is at its end),
        # and followed to its end all the same
        end = image_at(text, start, True, allowed, taken)
        assert end is not None
        kept = taken in ([text[start:end]], ["\\!"], ["!"])
        return (len(text), None, True) if kept else (end, "".join(taken), True)
    name = TAG_NAME.match(text, start)
    assert name is not None
    if name.end() < len(text) and not (text[name.end()].isspace() or text[name.end()] in "/>"):
        return name.end(), None, False  # `<https:…>` (an autolink), `a <b:`: no tag here
    loose = margin and _BLOCK_TAG.match(text, start) is not None
    closing = tag_end(text, name.end(), False, raw=False)
    # not ended: its placeholder stands to the line's end, not past it, lest the next line
    # (a closing fence) join this one
    end = len(text.rstrip("\n")) if closing is None else closing[0]
    tag = text[start:end]
    one_line = "\n" not in tag.rstrip("\n")
    if not (one_line or loose or (_TAG_BEGUN if closing is None else _WHOLE_TAG).fullmatch(tag)):
        return name.end(), None, False  # over lines, no tag as CommonMark reads one
    blocked = tag_blocked_host(tag, name.group(1), allowed)
    return end, None if blocked is None else placeholder(
        "", blocked if blocked != "?" else None), closing is None
