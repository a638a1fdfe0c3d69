"""What every wire-format adapter takes and gives."""

from __future__ import annotations

from typing import Any, Protocol

from loopwright.messages import ModelRequest, ModelResponse
from loopwright.profiles import Profile
from loopwright.wire.stream import StreamAccumulator

# Splits the system prompt into a static, cacheable prefix and a per-run part. Adapters that cache
# (Anthropic) split on it; the others remove it.
CACHE_BOUNDARY = "\n<!-- loopwright:cache-boundary -->\n"


class StreamParser(Protocol):
    """Consumes one SSE event at a time and feeds the shared accumulator."""

    def feed(self, event: str | None, data: str, acc: StreamAccumulator) -> None: ...

    @property
    def finished(self) -> bool:
        """True once the stream's own end marker arrived ([DONE], message_stop, …)."""
        ...


class WireFormat(Protocol):
    """A JSON-shape adapter for one API mode."""

    mode: str
    path: str  # relative to the base URL that ends in /v1, e.g. "/chat/completions"

    def build_body(self, request: ModelRequest, *, stream: bool,
                   profile: Profile = ...) -> dict[str, Any]: ...

    def encode_body(self, request: ModelRequest, *, stream: bool,
                    profile: Profile = ...) -> bytes:
        """`build_body` as the bytes sent, joined from per-message JSON cached on the messages."""
        ...

    def parse_body(self, body: dict[str, Any]) -> ModelResponse: ...

    def stream_parser(self) -> StreamParser: ...


def split_system(text: str) -> tuple[str, str]:
    """(static prefix, per-run part) of a system prompt."""
    head, sep, tail = text.partition(CACHE_BOUNDARY)
    if not sep:
        return text, ""
    return head, tail


def strip_boundary(text: str) -> str:
    if CACHE_BOUNDARY not in text:
        return text
    head, tail = split_system(text)
    return f"{head}\n\n{tail}" if tail else head
