"""The answer on stdout: Markdown rendered as it streams on a terminal, the raw text on a pipe.

On a terminal, finished blocks (up to a blank line outside a code fence) are printed rendered —
headings, lists, code blocks highlighted — and the block still being written is shown, rendered,
in a transient live region below them until it is finished too. Anywhere else the text is written
as it arrives, so `loopwright run "…" > answer.md` keeps the model's text — made inert in both
cases (`cli/inert.py`): an escape sequence in an answer is shown, never obeyed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.segment import Segment

from loopwright.cli.inert import InertConsole, inert

if TYPE_CHECKING:
    from rich.markdown import Markdown

_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


class _Blocks:
    """Where the finished blocks of a growing text end — the last blank line that is not inside
    a code fence — with each line looked at once however the text arrives (scanning all of it
    at every delta took half a minute to stream a list of 6,000 lines)."""

    def __init__(self) -> None:
        self.scanned = 0  # the text before this is looked at: whole lines
        self.inside = False  # there, inside a code fence
        self.cut = 0

    def scan(self, text: str) -> int:
        """The cut in `text`, which only grew since the last call."""
        while (end := text.find("\n", self.scanned)) >= 0:
            line = text[self.scanned:end + 1]
            self.scanned = end + 1
            if _FENCE.match(line):
                self.inside = not self.inside
            elif not self.inside and not line.strip():
                self.cut = self.scanned
        return self.cut

    def taken(self, length: int) -> None:
        """The first `length` characters left the text."""
        self.scanned -= length
        self.cut = max(0, self.cut - length)


def split_finished(text: str) -> tuple[str, str]:
    """(finished blocks, the block still being written): the cut is the last blank line that is
    not inside a code fence."""
    cut = _Blocks().scan(text)
    return text[:cut], text[cut:]


def screenful(text: str, height: int, width: int) -> str:
    """The end of a block that is enough to fill `height` lines of `width` columns, from the
    start of a line where it has one. A code fence opened before that end is kept, so the end
    still reads as code."""
    budget = height * max(width, 1)
    if len(text) <= budget:
        return text
    cut = len(text) - budget
    line_start = text.find("\n", cut) + 1
    if 0 < line_start < len(text):
        cut = line_start
    head = text[:cut]
    fences = _FENCE.findall(head)
    if len(fences) % 2 == 0:
        return text[cut:]
    opener = [m for m in _FENCE.finditer(head)][-1]
    return head[opener.start():head.find("\n", opener.start()) + 1] + text[cut:]


class _Pending:
    """The live region's content: the block being written, its last lines that fit the screen.
    The region's own thread renders it (`REFRESHES` times a second), not every delta: rendering
    grows with the block, and a long code block re-highlighted at every delta took minutes;
    only the end that shows is rendered (the block is printed whole once finished)."""

    def __init__(self, stream: AnswerStream) -> None:
        self.stream = stream
        self._key: tuple[str, int, int] | None = None
        self._lines: list[list[Segment]] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.stream.pending.strip("\n")
        height = max(1, console.size.height - 2)
        key = (text, options.max_width, height)
        if key != self._key:
            shown = _markdown(screenful(text, height, options.max_width))
            self._lines = console.render_lines(shown, options, pad=False)[-height:]
            self._key = key
        for line in self._lines:
            yield from line
            yield Segment.line()


REFRESHES = 10
"""Times a second the block being written is drawn again."""


def _markdown(text: str) -> Markdown:
    # rich's Markdown (markdown-it, and pygments for code blocks) is a third of the CLI's start-up:
    # imported by the first answer rendered on a terminal, never for a pipe
    from rich.markdown import Markdown

    return Markdown(text)


class AnswerStream:
    """Takes text deltas; `end()` closes the answer (a newline, or the last rendered block)."""

    def __init__(self, out: TextIO, *, console: Console | None = None,
                 markdown: bool | None = None) -> None:
        self._out = out
        self.console = console or InertConsole(file=out, highlight=False)
        self.markdown = self.console.is_terminal if markdown is None else markdown
        self._pending = ""  # markdown: text of the block being written
        self._blocks = _Blocks()  # where in it a block ends
        self._live: Live | None = None
        self.line_open = False  # raw: stdout holds text not yet ended by a newline
        self._line = ""  # raw: that text
        self._suspended = ""  # what `suspend()` took down, shown again by the next write

    @property
    def active(self) -> bool:
        """Something of the answer is on screen and not yet closed."""
        return self.line_open or bool(self._pending)

    def write(self, text: str) -> None:
        text = self._suspended + inert(text)
        self._suspended = ""
        if not text:
            return
        if not self.markdown:
            self._out.write(text)
            self._out.flush()
            newline = text.rfind("\n")
            self._line = text[newline + 1:] if newline >= 0 else self._line + text
            self.line_open = bool(self._line)
            return
        self._pending += text
        cut = self._blocks.scan(self._pending)
        finished, self._pending = self._pending[:cut], self._pending[cut:]
        self._blocks.taken(cut)
        if finished.strip():
            self._stop_live()
            self.console.print(_markdown(finished.strip("\n")))
            self.console.print()
        if self._pending.strip():
            self._show_pending()

    def suspend(self) -> None:
        """The reply being written broke off and is tried again: its unfinished part (the block
        being written, or the raw text's open line) leaves the screen, or is ended there, and
        comes back at the start of the next write, so the retried reply continues it on lines
        of its own. `discard()` forgets it instead (the retry's reply is a new one)."""
        if not self.markdown:
            line = self._line
            self.end()
            self._suspended += line
            return
        self._stop_live()  # transient: the unfinished block leaves the screen
        self._suspended, self._pending = self._suspended + self._pending, ""
        self._blocks = _Blocks()

    def discard(self) -> None:
        """Forget what `suspend()` took down: the reply that follows starts anew."""
        self._suspended = ""

    def end(self) -> None:
        """Close the answer: the last block rendered for good, or the raw text's newline."""
        if self.markdown and self._suspended:  # a retry gave nothing new: what it took down
            self._pending, self._suspended = self._suspended + self._pending, ""  # is the end
        if not self.markdown:
            self._suspended = ""  # (still on the screen, above the retry's note)
            if self.line_open:
                self._out.write("\n")
                self._out.flush()
                self.line_open, self._line = False, ""
            return
        self._stop_live()
        if self._pending.strip():
            self.console.print(_markdown(self._pending.strip("\n")))
        self._pending = ""
        self._blocks = _Blocks()

    @property
    def pending(self) -> str:
        """Markdown: the text of the block being written."""
        return self._pending

    def _show_pending(self) -> None:
        if self._live is None:
            self._live = Live(_Pending(self), console=self.console, transient=True,
                              refresh_per_second=REFRESHES, vertical_overflow="crop")
            self._live.start(refresh=True)

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
