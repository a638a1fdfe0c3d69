"""HTML → Markdown with the standard library's `html.parser` (no extra dependency).

Good enough for reading documentation pages: headings, paragraphs, links, lists, code blocks,
emphasis, quotes, images and simple tables. Scripts, styles and other invisible parts are dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "head", "canvas",
                   "object", "button", "select", "form"})
_BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "nav",
                     "aside", "figure", "figcaption", "details", "summary", "dl", "dt", "dd",
                     "address", "table", "ul", "ol"})
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed",
                   "source", "track", "wbr"})
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "del": "~~", "s": "~~"}


def html_to_markdown(html: str, base_url: str = "") -> tuple[str, str]:
    """(title, markdown) of an HTML document; links and images are made absolute."""
    parser = _MarkdownParser(base_url)
    parser.feed(html)
    parser.close()
    return parser.title.strip(), parser.markdown()


class _MarkdownParser(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.title = ""
        self._out: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._pre = 0
        self._lists: list[list[int | str]] = []  # [kind, counter] per open list
        self._links: list[str | None] = []
        self._quote = 0
        self._cell_count = 0
        self._table_rows = 0

    # -- output helpers --

    def _emit(self, text: str) -> None:
        self._out.append(text)

    def _block_break(self) -> None:
        self._emit("\n\n" + "> " * self._quote)

    # -- parser callbacks --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP:
            if tag not in _VOID:
                self._skip_depth += 1
            return
        if self._skip_depth:
            return
        self._open(tag, dict(attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self._skip_depth:
            self._open(tag, dict(attrs))
            if tag not in _VOID:
                self._close(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self._skip_depth = max(self._skip_depth - 1, 0)
            return
        if not self._skip_depth:
            self._close(tag)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip_depth:
            return
        if self._pre:
            self._emit(data)
            return
        text = re.sub(r"\s+", " ", data)
        if text.strip() or (text and self._out and not self._out[-1].endswith((" ", "\n"))):
            self._emit(text)

    # -- tags --

    def _open(self, tag: str, attrs: dict[str, str | None]) -> None:
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._block_break()
            self._emit("#" * int(tag[1]) + " ")
        elif tag == "pre":
            self._pre += 1
            language = _language(attrs.get("class") or "")
            self._block_break()
            self._emit(f"```{language}\n")
        elif tag == "code" and not self._pre:
            self._emit("`")
        elif tag == "code" and self._out and self._out[-1] == "```\n":
            self._out[-1] = f"```{_language(attrs.get('class') or '')}\n"
        elif tag in ("ul", "ol"):
            self._lists.append([tag, 0])
            if len(self._lists) == 1:
                self._block_break()
        elif tag == "li":
            self._list_item()
        elif tag == "a":
            href = attrs.get("href")
            self._links.append(urljoin(self.base_url, href) if href else None)
            if href:
                self._emit("[")
        elif tag == "img":
            src = attrs.get("src")
            if src:
                self._emit(f"![{attrs.get('alt') or ''}]({urljoin(self.base_url, src)})")
        elif tag == "br":
            self._emit("  \n" + "> " * self._quote)
        elif tag == "hr":
            self._block_break()
            self._emit("---")
            self._block_break()
        elif tag == "blockquote":
            self._quote += 1
            self._block_break()
        elif tag in _EMPHASIS:
            self._emit(_EMPHASIS[tag])
        elif tag == "tr":
            self._emit("\n| ")
            self._cell_count = 0
        elif tag in ("td", "th"):
            self._cell_count += 1
        elif tag in _BLOCKS:
            self._block_break()

    def _close(self, tag: str) -> None:
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._block_break()
        elif tag == "pre":
            self._pre = max(self._pre - 1, 0)
            if not "".join(self._out[-1:]).endswith("\n"):
                self._emit("\n")
            self._emit("```")
            self._block_break()
        elif tag == "code" and not self._pre:
            self._emit("`")
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            if not self._lists:
                self._block_break()
        elif tag == "a":
            href = self._links.pop() if self._links else None
            if href:
                self._emit(f"]({href})")
        elif tag == "blockquote":
            self._quote = max(self._quote - 1, 0)
            self._block_break()
        elif tag in _EMPHASIS:
            self._emit(_EMPHASIS[tag])
        elif tag in ("td", "th"):
            self._emit(" | ")
        elif tag == "tr":
            self._table_rows += 1
            if self._table_rows == 1:
                self._emit("\n|" + " --- |" * max(self._cell_count, 1))
        elif tag == "table":
            self._table_rows = 0
            self._block_break()
        elif tag in _BLOCKS:
            self._block_break()

    def _list_item(self) -> None:
        depth = max(len(self._lists) - 1, 0)
        bullet = "-"
        if self._lists and self._lists[-1][0] == "ol":
            counter = int(self._lists[-1][1]) + 1
            self._lists[-1][1] = counter
            bullet = f"{counter}."
        self._emit("\n" + "> " * self._quote + "  " * depth + bullet + " ")

    def markdown(self) -> str:
        text = "".join(self._out)
        text = re.sub(r"[ \t]+\n", "\n", text)
        text = re.sub(r"\n(?:>? *\n){2,}", "\n\n", text)
        return text.strip() + "\n" if text.strip() else ""


def _language(css_class: str) -> str:
    match = re.search(r"(?:language|lang)-([\w+#-]+)", css_class)
    return match.group(1) if match else ""
