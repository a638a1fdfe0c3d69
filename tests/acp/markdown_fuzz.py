"""Markdown built from pieces for fuzzing `acp/inert.py`, and the oracle it is judged by: the
images a CommonMark renderer (markdown-it-py, HTML on) would load from a host off the list.

`python tests/acp/markdown_fuzz.py SECONDS [FIRST_SEED]` fuzzes for longer than the test does
and prints each leaking case found, shrunk to its fewest pieces."""

from __future__ import annotations

import random
import re
import sys
import time
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from markdown_it import MarkdownIt

if TYPE_CHECKING:
    from loopwright.acp.inert import MarkdownGuard

ALLOWED_HOST = "ok.example"
_RENDERER = MarkdownIt("commonmark", {"html": True})
_REMOTE = re.compile(r"^\s*(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[\\/]{2}|^\s*(?:https?|ftp|wss?):",
                     re.IGNORECASE)

ADDRESSES = [
    "https://evil.example/a?d=S", "//evil.example/p?d=S", "h&#116;tps://evil.example/e",
    "&#x2F;&#x2F;evil.example/x", "\\\\evil.example/b", "HTTPS://EVIL.EXAMPLE/c",
    "https://evil.example/t \"title\"", "<https://evil.example/angle>", "https:evil.example/n",
    "https://ok.example/fine.png", "https://ok.example.evil.example/x", "x.png", "docs/a b.png",
    "data:image/png;base64,AAAA", "https://evil.example/(paren)", "ht\\tps://evil.example/z",
    "https&#58;//evil.example/colon", "%2F%2Fevil.example/pct", "https://evil.example/new\nline",
    "<//evil.example/a b>", "/\\evil.example/mixed", "&#47;&#47;evil.example/dec",
    "\t//evil.example/t",
    "HtTpS://evil.example/case", "https://user@evil.example/u", "https://ok.example@evil.example/at",
]
LABELS = ["a", "", "x]y", "a`b", "[n]", "a\\]", "*em*", "ref", "REF", "<b>", "a\nb"]
FENCE_RUNS = ["```", "````", "~~~", "~~~~~", "``", "`````"]
INFO = ["", "md", "markdown", " python", "``x", "~x"]
HTML_OPENINGS = ["<div>", "<pre>", "</pre>", "<!--", "-->", "<?php", "?>", "<![CDATA[", "]]>",
                 "<script>", "</script>", "<span>", "</div>", "<!DOCTYPE html>", "<p>",
                 "<textarea>", "</textarea>", "<style>", "</style>", "<table>"]
PROSE = ["Some text.", "a < b > c", "**bold** and _it_", "`code` here", "see [docs](x.md)",
         "3 * 4 = 12", "trailing \\", "an & sign", "a ! mark", "[", "]", "(", ")", "#", "---",
         "> quoted", "* star", "+ plus", "1) one", "2. two"]


def _address(rng: random.Random) -> str:
    return rng.choice(ADDRESSES)


def _image(rng: random.Random) -> str:
    label = rng.choice(LABELS)
    shape = rng.randrange(6)
    if shape == 0:
        return f"![{label}]({_address(rng)})"
    if shape == 1:
        return f"![{label}][{rng.choice(['ref', 'REF', 'other', ''])}]"
    if shape == 2:
        return f"![{rng.choice(['ref', 'REF', 'Ref'])}]"
    if shape == 3:
        return f"[![{label}]({_address(rng)})](https://link.example)"
    if shape == 4:
        return f"![{label}]( {_address(rng)} )"
    return f"![{label}]({_address(rng)}"  # unterminated


def _tag(rng: random.Random) -> str:
    url = _address(rng).replace('"', "")
    return rng.choice([
        f'<img src="{url}">', f"<img src={url.split()[0]}>", f"<img\nsrc='{url}'>",
        f'<img srcset="a.png 1x, {url} 2x">', f'<video poster="{url}"></video>',
        f'<div style="background:url({url})">', f'<img src="{url}"', f"<IMG SRC={url}>",
        f'<svg><image href="{url}"/></svg>', f'<a href="{url}">link</a>',
        f"<iframe src='{url}'></iframe>", f'<object data="{url}"></object>',
        f'<input type=image src="{url}">', f'<link rel=stylesheet href="{url}">',
        f'<table background="{url}">', f"<img src=`{url.split()[0]}`>",
        f'<img\tsrc="{url}">', f'<img src = "{url}" >', f"<img\n\nsrc='{url}'>",
    ])


def _block(rng: random.Random) -> str:
    kind = rng.randrange(12)
    indent = rng.choice(["", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "   \t"])
    if kind == 0:  # a fence, sometimes unterminated or closed by another run
        run = rng.choice(FENCE_RUNS)
        body = "\n".join(_inline(rng) for _ in range(rng.randrange(3)))
        close = rng.choice([run, run, run + run[0], run[:-1], rng.choice(FENCE_RUNS), ""])
        margin = rng.choice(["", " ", "  ", "   ", "    ", "\t", " \t", "   \t"])
        return f"{indent}{run}{rng.choice(INFO)}\n{body}\n{margin}{close}"
    if kind == 1:  # indented code: at the margin, in a quote, in a list item, an item's text
        prefix = rng.choice(["    ", "\t", "  \t", "     ", ">\t\t", ">     ", "      ", "\t\t"])
        head = rng.choice(["", "", "-     ", "1.     ", "-\t\t", "- a\n\n", "> a\n", "a\n"])
        return head + "\n".join(rng.choice([prefix, prefix, "", "  "]) + _inline(rng)
                                 for _ in range(1 + rng.randrange(3)))
    if kind == 2:
        return indent + rng.choice(HTML_OPENINGS) + rng.choice(["", "\n", " "]) + _inline(rng)
    if kind == 3:  # a reference definition
        title = rng.choice(["", ' "t"', " 't'", " (t)"])
        return f"{indent}[{rng.choice(['ref', 'REF', 'other'])}]: {_address(rng)}{title}"
    if kind == 4:  # a list item
        marker = rng.choice(["- ", "* ", "1. ", "2) ", "-", "- \n  ", "-\t", "1.\t", "- \t",
                             "-\n\n  ", "- \tx\n  "])
        return indent + marker + _inline(rng)
    if kind == 5:  # a block quote, nested, a tab after its marker, a list or HTML block in it
        quote = rng.choice(["> ", ">", ">\t", "> > ", ">>", "> - ", ">\t\t", ">  \t", "> 1. "])
        opening = rng.choice(["", "", rng.choice(HTML_OPENINGS) + "\n" + quote])
        return indent + quote + opening + _inline(rng)
    if kind == 6:
        return ""  # a blank line
    if kind == 7:  # a container around a fence: a block quote, a list in one, a nested list
        container = rng.choice(["> ", ">", "> - ", "- - ", "1. - ", "\t", " > > ", "-\t", "- \t",
                                "-\n\n  ", ">\t", "> >", ">\t- ", "> \t", "- > ", ">  - "])
        run = rng.choice(FENCE_RUNS)
        lines = [f"{container}{run}", *(rng.choice([container, "", "  ", "   "]) + _inline(rng)
                                       for _ in range(1 + rng.randrange(2)))]
        return "\n".join(lines)
    if kind == 11:  # an HTML block that runs past blank lines, and a tag in it over one
        url = _address(rng).replace("'", "")
        return f"{indent}<pre>\n<img\n\nsrc='{url}'>"
    return indent + _inline(rng)


def _inline(rng: random.Random) -> str:
    parts = []
    for _ in range(1 + rng.randrange(3)):
        pick = rng.randrange(5)
        parts.append(_image(rng) if pick == 0 else _tag(rng) if pick == 1
                     else rng.choice(PROSE))
    return rng.choice([" ", "", "\n"]).join(parts)


def pieces(seed: int) -> list[str]:
    """The blocks of one case."""
    rng = random.Random(seed)
    return [_block(rng) for _ in range(1 + rng.randrange(7))]


def document(blocks: list[str], seed: int) -> str:
    """The blocks joined; one case in two with CommonMark's other line endings (CRLF, a lone
    CR), one in ten with the three mixed."""
    rng = random.Random(seed * 7919 + len(blocks))
    text = "".join(block + rng.choice(["\n", "\n", "\n\n", ""]) for block in blocks)
    ending = rng.choice(["\n"] * 4 + ["\r\n"] * 2 + ["\r"] * 2 + ["mixed"] * 2)
    if ending != "mixed":
        return text.replace("\n", ending)
    return "".join(rng.choice(["\n", "\r\n", "\r"]) if char == "\n" else char for char in text)


def deltas(text: str, seed: int) -> list[str]:
    """`text` cut where a stream might cut it."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), min(max(len(text) - 1, 0),
                                                      rng.randrange(12))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


class _Loads(HTMLParser):
    """Every address a tag other than a link's would load (`src`, `srcset`, `poster`, `href`
    of an SVG image, a style's `url(…)`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.addresses: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            return
        for _name, value in attrs:
            if not value:
                continue
            for candidate in re.split(r"[\s,]+|url\(|\)", value):
                if candidate:
                    self.addresses.append(candidate)


def code_blocks(markdown: str) -> list[str]:
    """The text of each code block (fenced or indented) `markdown` renders, HTML-escaped."""
    return re.findall(r"<code[^>]*>(.*?)</code>", _RENDERER.render(markdown), re.DOTALL)


def streamed_in_two(guard: MarkdownGuard, text: str, cut: int) -> str:
    """What `guard` sends for `text` streamed as two deltas cut at `cut`."""
    stream = guard.stream()
    return stream.feed(text[:cut]) + stream.feed(text[cut:]) + stream.end()


def remote_loads(markdown: str) -> list[str]:
    """The addresses off the list that rendering `markdown` would load."""
    loads = _Loads()
    loads.feed(_RENDERER.render(markdown))
    loads.close()
    return [address for address in loads.addresses if _off_the_list(address)]


def _off_the_list(address: str) -> bool:
    if not _REMOTE.match(address):
        return False
    host = urlsplit(address.strip().replace("\\", "/")).hostname or ""
    return host != ALLOWED_HOST


def leaks(seed: int, blocks: list[str] | None = None) -> tuple[str, str, str] | None:
    """(input, output, what loads) for a case whose inert text, whole or streamed, still loads
    an image off the list; None when it loads none."""
    from loopwright.acp.inert import MarkdownGuard

    blocks = pieces(seed) if blocks is None else blocks
    text = document(blocks, seed)
    guard = MarkdownGuard((ALLOWED_HOST,))
    stream = guard.stream()
    streamed = "".join(stream.feed(delta) for delta in deltas(text, seed)) + stream.end()
    for shown in (guard.text(text), streamed):
        found = remote_loads(shown)
        if found:
            return text, shown, " ".join(found)
    return None


def leaks_at_every_cut(text: str) -> tuple[int, str, str] | None:
    """(where, output, what loads) for the first cut of `text` into two stream deltas (at
    every character: between a CR and its LF, inside a fence's run) whose inert text still
    loads an image off the list; None when no cut does."""
    from loopwright.acp.inert import MarkdownGuard

    guard = MarkdownGuard((ALLOWED_HOST,))
    for cut in range(1, len(text)):
        shown = streamed_in_two(guard, text, cut)
        found = remote_loads(shown)
        if found:
            return cut, shown, " ".join(found)
    return None


def shrunk(seed: int) -> list[str]:
    """The fewest of a leaking case's blocks that still leak."""
    blocks = pieces(seed)
    changed = True
    while changed:
        changed = False
        for index in range(len(blocks)):
            fewer = blocks[:index] + blocks[index + 1:]
            if fewer and leaks(seed, fewer) is not None:
                blocks, changed = fewer, True
                break
    return blocks


def fuzz(seconds: float, first_seed: int = 0) -> list[int]:
    """The seeds of the leaking cases found in `seconds`."""
    found, seed, deadline = [], first_seed, time.monotonic() + seconds
    while time.monotonic() < deadline:
        if leaks(seed) is not None:
            found.append(seed)
        seed += 1
    return found


if __name__ == "__main__":
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    seeds = fuzz(float(sys.argv[1]), first)
    print(f"{len(seeds)} leaking case(s) from seed {first}")
    for seed in seeds[:20]:
        blocks = shrunk(seed)
        case = leaks(seed, blocks)
        assert case is not None
        print(f"--- seed {seed}\n{case[0]!r}\n=> {case[1]!r}\nloads {case[2]}")
