"""The runtime's own markup in a model's reply: a small model that imitates it must not hand it
to the user.

Tool results reach the model inside `<tool_response>` blocks (prompt mode, and llama.cpp's Qwen
template in native mode) and runtime notes inside `<system-reminder>` tags. Small models copy both:
Qwen2.5-Coder-1.5B answered with a made-up `<tool_response>{"output": …}` block and with
`<system-reminder>Weather service is currently unavailable…`. Such blocks are never the model's
answer: they are removed from what the user sees (streamed or final), and a reply that was
nothing else is sent back to the model by the review stage (`review/answers.py`, its notes in
`notes.py`); a made-up result of a named tool is set aside instead (later requests leave it
out) and answered with the call to make. Markup written as code is text.
"""

from __future__ import annotations

import re
from collections.abc import Collection

RUNTIME_TAGS = ("system-reminder", "tool_response")
# a block with its closing tag, or an unclosed one running to the end of the reply
_BLOCK = re.compile(r"<(system-reminder|tool_response)(?:\s[^>]*)?>.*?(?:</\1>|\Z)", re.S)
_STRAY = re.compile(r"</?(?:system-reminder|tool_response)(?:\s[^>]*)?>")

_NAMED_RESULT = re.compile(r'<tool_response\s+name="([^"<>]{1,128})"')


def made_up_result_of(text: str, tools: Collection[str]) -> str | None:
    """The offered tool that an imitated `<tool_response name="…">` names, or None."""
    named = _NAMED_RESULT.search(text)
    return named.group(1) if named is not None and named.group(1) in tools else None


def is_runtime_block(region: str) -> bool:
    """Whether a held region of a streamed reply is one of the runtime's own blocks."""
    return region.lstrip().startswith(tuple(f"<{t}" for t in RUNTIME_TAGS))


# code in Markdown: a block fenced with backticks or tildes, a span
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]+`", re.S)


def strip_runtime_markup(text: str) -> str:
    """`text` without runtime blocks or stray runtime tags (unchanged when there are none).
    Markup inside code (a fenced block, a `span`) is text: a how-to answer may show the tags."""
    if "<" not in text or not _STRAY.search(text):
        return text
    code: list[str] = []

    def hide(match: re.Match[str]) -> str:
        code.append(match.group(0))
        return f"\x00{len(code) - 1}\x00"

    hidden = _CODE.sub(hide, text) if "`" in text or "~~~" in text else text
    if not _STRAY.search(hidden):
        return text
    stripped = _STRAY.sub("", _BLOCK.sub("", hidden))
    stripped = re.sub(r"\x00(\d+)\x00", lambda m: code[int(m.group(1))], stripped)
    return re.sub(r"\n{3,}", "\n\n", stripped).strip()
