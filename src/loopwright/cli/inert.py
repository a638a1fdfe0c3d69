"""Text from outside (the model, tool output, files, servers) made inert before the terminal sees
it: no escape sequence of theirs reaches the screen (OSC 52 writes the clipboard, OSC 8 hides a
link behind harmless text, CSI moves the cursor to repaint a line), while loopwright's own styling
— added by rich as control segments and styles — is kept.

`escape_controls` is the strict form for prompts that ask the user to decide something: every
control, bidi and zero-width character is shown as an escape. `inert` is the form for output that
is read, not decided on (answers, reasoning, tool output, diffs, notes): control characters are
shown as escapes, bidi overrides too, but the joiners that emoji and some scripts need are kept and
CRLF line ends are plain line ends. `InertConsole` applies `inert` to every piece of text it
renders, so nothing printed through it can carry a sequence of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

_BIDI = frozenset({*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F})
_INVISIBLE = frozenset({0x200B, 0x200C, 0x200D, 0x2028, 0x2029, 0x2060, 0xFEFF, *_BIDI})


def _visible(code: int) -> str:
    if code in _BIDI or code in _INVISIBLE:
        return f"\\u{code:04x}"
    return {0x0D: "\\r", 0x0A: "\\n"}.get(code, f"\\x{code:02x}")


_CONTROLS = [*range(0x20), *range(0x7F, 0xA0)]
_INERT: dict[int, str | None] = {code: _visible(code) for code in [*_CONTROLS, *_BIDI]
          if code not in (0x09, 0x0A)}
_INERT[0x0D] = None  # a lone CR would repaint its line; CRLF is a line end either way
_STRICT = {code: _visible(code) for code in [*_CONTROLS, *_INVISIBLE] if code != 0x09}
_STRICT_KEEP_NEWLINES = {code: value for code, value in _STRICT.items() if code != 0x0A}


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with control characters, bidi overrides and zero-width characters shown as
    escapes (`\\x1b`, `\\r`, `\\u202e`), so a command cannot repaint or hide part of itself
    in the prompt that approves it."""
    return text.translate(_STRICT_KEEP_NEWLINES if keep_newlines else _STRICT)


def inert(text: str) -> str:
    """`text` safe to print: every control character but newline and tab shown as an escape
    (`\\x1b]52;…` stays readable and does nothing), bidi overrides too, carriage returns
    dropped."""
    return text.translate(_INERT)


class InertConsole(Console):
    """A rich console whose rendered text is always inert: what it prints may come from anyone.

    Rich keeps its own escape sequences out of the text of segments (styles, and control
    segments for the cursor), so making each segment's text inert removes only what the content
    carried."""

    def render(self, renderable: RenderableType,
               options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(inert(segment.text), segment.style)
