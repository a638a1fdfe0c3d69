"""Streaming holdback: text deltas reach the user only once they surely are not part of a call.

Whatever may start a call (a marker of any family, a `{`, `[`, a fence, a known tool's name at
the start of a line) is held until it resolves: text that cannot become a call is released at
once; a region with a known end (a closing tag, a balanced object, a closing fence) is checked
with the real parser when it ends, then dropped (a call) or shown (not one); markers without a
closing tag hold the rest of the reply. `finish()` shows what of the final visible text was not
sent yet, so nothing is lost and nothing that the parser took as a call is ever shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Literal

from loopwright.wire.text_calls.registry import (
    LONGEST_MARKER,
    MARKERS,
    could_be_call_prefix,
    parse_tool_calls,
)

DeltaListener = Callable[[str], None]
Verdict = Literal["wait", "text", "call", "rest"]


def _default_is_call(region: str) -> bool:
    found = parse_tool_calls(region)
    return bool(found.calls or found.malformed)


class _Region:
    """A held region at the head of the buffer and where it ends, scanned incrementally: each
    character is looked at once however the region arrives, so a long call costs linear time."""

    def __init__(self, buffer: str) -> None:
        self.marker = next((m for m in MARKERS if buffer.startswith(m)), None)
        self.fence = self.marker is None and buffer.startswith("```")
        self.pos = 0  # how far the buffer was scanned
        self.depth = 0
        self.opened = False
        self.quote = ""
        self.escaped = False

    def end(self, buffer: str) -> int | None:
        """Where the region ends; None while it has not ended yet."""
        if self.marker is not None:
            closer = MARKERS[self.marker]
            if closer is None:
                return None
            index = buffer.find(closer, max(len(self.marker), self.pos - len(closer)))
            self.pos = len(buffer)
            return None if index < 0 else index + len(closer)
        if self.fence:
            newline = buffer.find("\n")
            if newline < 0:
                return None
            index = buffer.find("```", max(newline, self.pos - 3))
            self.pos = len(buffer)
            return None if index < 0 else index + 3
        return self._balanced(buffer)

    def _balanced(self, buffer: str) -> int | None:
        for i in range(self.pos, len(buffer)):
            ch = buffer[i]
            if self.quote:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == self.quote:
                    self.quote = ""
            elif ch in "\"'" and self.opened:
                self.quote = ch
            elif ch in "{[(":
                self.depth += 1
                self.opened = True
            elif ch in "}])":
                self.depth -= 1
                if self.opened and self.depth <= 0:
                    self.pos = i + 1
                    return i + 1
        self.pos = len(buffer)
        return None


class MarkupFilter:
    """Wraps a text-delta listener and holds back anything that may be a call."""

    def __init__(self, listener: DeltaListener, *,
                 is_call: Callable[[str], bool] | None = None,
                 known: Callable[[], Collection[str]] | None = None) -> None:
        self.listener = listener
        self.is_call = is_call or _default_is_call
        self.known = known
        self.buffer = ""
        self.emitted: list[str] = []
        self.line = ""  # what was shown since the last newline: a call may need a line to itself
        self.holding_rest = False
        self.done = False
        self._region: _Region | None = None

    def __call__(self, delta: str) -> None:
        if self.done:
            return
        self.buffer += delta
        if not self.holding_rest:
            self._pump()

    def reply_anew(self) -> None:
        """The reply starts again from its beginning (a fallback model's, a retry's): what the
        broken one left held or shown is no part of the new one."""
        self.buffer, self.line, self._region = "", "", None
        self.emitted.clear()
        self.holding_rest = self.done = False
        inner = getattr(self.listener, "reply_anew", None)
        if inner is not None:
            inner()

    def finish(self, visible: str) -> None:
        """The reply is complete and `visible` is its text without markup: send the rest."""
        if self.done:
            return
        self.done = True
        self._emit(_unsent_part(visible, "".join(self.emitted)))

    # -- internals --

    def _pump(self) -> None:
        known = self.known() if self.known is not None else None
        while self.buffer and not self.holding_rest:
            if self._region is None:
                start = self._candidate(known)
                if start is None:
                    keep = _partial_marker_tail(self.buffer)
                    self._emit(self.buffer[:len(self.buffer) - keep])
                    self.buffer = self.buffer[len(self.buffer) - keep:]
                    return
                self._emit(self.buffer[:start])
                self.buffer = self.buffer[start:]
            verdict, length = self._resolve(known)
            if verdict == "wait":
                return
            self._region = None
            if verdict == "rest":
                self.holding_rest = True
                return
            if verdict == "text":
                self._emit(self.buffer[:length])
            else:
                self.line = ""
            self.buffer = self.buffer[length:]

    def _candidate(self, known: Collection[str] | None) -> int | None:
        buffer = self.buffer
        if not _MAY_START.intersection(buffer) and (
                not known or ("\n" not in buffer and self.line.strip())):
            return None  # the common case per streamed token: nothing here can start a call
        first = _ANY_MARKER.search(buffer)  # the first place a marker starts, as min(find)
        hits = [first.start()] if first is not None else []
        hits += [i for ch in "{[`" if (i := buffer.find(ch)) >= 0]
        if known:
            hits += [i for i in _line_starts(buffer, self.line) if i < len(buffer)
                     and (buffer[i].isalpha() or buffer[i] == "_")
                     and could_be_call_prefix(buffer[i:i + 80], known)]
        return min(hits) if hits else None

    def _resolve(self, known: Collection[str] | None) -> tuple[Verdict, int]:
        buffer = self.buffer
        if not could_be_call_prefix(buffer[:_PREFIX_WINDOW], known):
            return "text", 1
        region = self._region
        if region is None:
            if any(m.startswith(buffer) and m != buffer for m in MARKERS):
                return "wait", 0  # a marker still arriving
            region = self._region = _Region(buffer)
        if region.marker is not None and MARKERS[region.marker] is None:
            return "rest", 0
        end = region.end(buffer)
        if end is None:
            return "wait", 0
        return ("call" if self.is_call(self.line + buffer[:end]) else "text"), end

    def _emit(self, text: str) -> None:
        if not text:
            return
        self.emitted.append(text)
        newline = text.rfind("\n")
        self.line = text[newline + 1:] if newline >= 0 else self.line + text
        self.listener(text)


_MAY_START = frozenset("<[{`")  # every marker starts with "<" or "["
_ANY_MARKER = re.compile("|".join(map(re.escape, MARKERS)))
_PREFIX_WINDOW = 200  # enough to see a marker, a fence's language, or an object's first key


def _partial_marker_tail(buffer: str) -> int:
    """Length of the end of the buffer that may still become a marker."""
    if not _MAY_START.intersection(buffer[-(LONGEST_MARKER - 1):]):
        return 0
    for length in range(min(len(buffer), LONGEST_MARKER - 1), 0, -1):
        tail = buffer[-length:]
        if any(m.startswith(tail) for m in MARKERS):
            return length
    return 0


def _line_starts(buffer: str, line: str) -> list[int]:
    starts = [0] if not line.strip() else []
    index = buffer.find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = buffer.find("\n", index + 1)
    return [_skip_blanks(buffer, s) for s in starts]


def _skip_blanks(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


def _unsent_part(visible: str, sent: str) -> str:
    """The part of `visible` after what `sent` already showed, comparing without whitespace
    (markup removal and tidying change blank lines); nothing if they diverge."""
    if visible.startswith(sent):  # the common case, at C speed: what was shown is its start
        rest = visible[len(sent.rstrip()):]
        return rest.lstrip() if sent[-1:].isspace() or not sent else rest
    j = 0
    for ch in sent:
        if ch.isspace():
            continue
        while j < len(visible) and visible[j].isspace():
            j += 1
        if j >= len(visible) or visible[j] != ch:
            return ""
        j += 1
    rest = visible[j:]
    return rest.lstrip() if sent[-1:].isspace() or not sent else rest
