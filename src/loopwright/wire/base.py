"""What every wire-format adapter takes and gives."""

from __future__ import annotations

from typing import Any, Protocol

from loopwright.messages import ModelRequest, ModelResponse
from loopwright.profiles import Profile
from loopwright.wire.stream import StreamAccumulator

# Splits the system prompt into a static, cacheable prefix and a per-run part. Adapters that cache
# (Anthropic) split on it; the others remove it.
CACHE_BOUNDARY = "\n<!-- loopwright:cache-boundary -->\n"


# "over the window" as providers word it: OpenAI and OpenRouter ("maximum context length",
# context_length_exceeded), the Responses API ("context window"), Anthropic ("prompt is too
# long", "exceed context limit"), vLLM ("maximum model length"), llama.cpp ("exceeds the
# available context size", exceed_context_size_error), Ollama ("the input length exceeds the
# context length"), LM Studio ("… context length of only N tokens"), DashScope ("Range of input
# length should be [1, N]"), TGI ("`inputs` tokens + `max_new_tokens` must be <= N"), and upstream
# providers OpenRouter passes on: xAI ("maximum prompt length"), Google ("exceeds the maximum
# number of tokens"), Poolside ("maximum allowed input length"). Whole phrases or error codes,
# not a name's part: a 400 about a tool named `get_context_length` is no overflow.
# tests/endpoints/test_overflow_wordings.py holds each reply, and replies that must not match
_OVERFLOW_WORDINGS = ("context length", "context_length_exceeded", "maximum context",
                      "too many tokens", "prompt is too long", "context window",
                      "exceed context limit", "maximum model length", "context size",
                      "exceed_context_size", "maximum prompt length",
                      "exceeds the maximum number of tokens", "maximum allowed input length",
                      "range of input length", "`inputs` tokens + `max_new_tokens`",
                      "`inputs` must have less than")


ERROR_HEAD_CHARS = 65_536
"""How much of an error body is searched for its meaning and numbers: they come near its start;
a body that echoes the request after them (or a hostile one) may go on for megabytes, every
wording searched over all of it on the event loop (~10 s for 20 MB)."""


def says_overflow(text: str) -> bool:
    """True when a provider's error text says the request is over the model's window."""
    lowered = text.lower()
    return any(wording in lowered for wording in _OVERFLOW_WORDINGS)


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
