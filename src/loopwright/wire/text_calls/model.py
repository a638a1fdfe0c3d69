"""What the text-call parsers produce, and which tool names they may accept."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True, slots=True)
class TextToolCall:
    """One call found in text. `arguments` is JSON text, or the raw text as written."""

    name: str
    arguments: str
    style: str  # the family: "hermes", "xml", "mistral", "pythonic", "json", "harmony", …


@dataclass(frozen=True, kw_only=True, slots=True)
class MalformedCall:
    """A block of call markup that could not be read as a call."""

    text: str
    problem: str


@dataclass(kw_only=True, slots=True)
class TextCalls:
    """What `parse_tool_calls` found: calls in order of discovery, unreadable blocks, the visible
    text with all call markup removed, and reasoning written in-band (gpt-oss analysis)."""

    calls: list[TextToolCall] = field(default_factory=list)
    malformed: list[MalformedCall] = field(default_factory=list)
    text: str = ""
    reasoning: str = ""


class Names:
    """Which names are acceptable. `known` is None for "any". Explicit call markup (tags, special
    tokens) may name any tool: the executor answers an unknown name with the real ones, so the
    model learns instead of the call becoming the answer. `trust_markup` (prompt mode) also
    reports unreadable markup back to the model instead of leaving it as text."""

    def __init__(self, known: Collection[str] | None, trust_markup: bool) -> None:
        self.known = None if known is None else frozenset(known)
        self.trust_markup = trust_markup or known is None

    def accepts(self, calls: list[TextToolCall], problem: str | None) -> bool:
        """Is a markup block taken out of the text: its calls, or its problem to report?"""
        if calls:
            return True
        return problem is not None and self.trust_markup

    def is_known(self, name: str) -> bool:
        return self.known is None or name in self.known
