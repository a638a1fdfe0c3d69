"""Token accounting without a tokenizer: a cheap estimate, corrected by what the provider reports.

The estimate is about four characters a token for ASCII text and one token a character for other
scripts (CJK, emoji), plus a small overhead per message. `TokenCounter` keeps, per run, the ratio
of the input tokens the provider reported to the estimate of the same request, and applies it, so
budgets track the real tokenizer after the first call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from loopwright.messages import Message, ModelRequest, ToolSpec

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # role markers and separators every chat template adds
TOOL_CALL_OVERHEAD = 8
REQUEST_OVERHEAD = 8
# per-message estimates are memoised in Message.wire_cache under this key: messages in a history
# are never mutated, so a cached estimate stays right and each turn only counts new messages
CACHE_KEY = "loopwright.tokens"


def estimate_text(text: str) -> int:
    """Tokens in `text`, roughly."""
    if not text:
        return 0
    if text.isascii():
        return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    # a CJK character takes 3 bytes in UTF-8 and about a token; half the extra bytes counts them
    wide = min(len(text), (len(text.encode("utf-8")) - len(text)) // 2)
    return (len(text) - wide + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + wide


def estimate_message(msg: Message) -> int:
    """Tokens one message costs in a request (memoised on the message)."""
    cached = msg.wire_cache.get(CACHE_KEY)
    if cached is not None:
        return int(cached)
    tokens = MESSAGE_OVERHEAD + estimate_text(msg.content) + estimate_text(msg.reasoning or "")
    for call in msg.tool_calls:
        tokens += TOOL_CALL_OVERHEAD + estimate_text(call.name) + estimate_text(call.arguments)
    msg.wire_cache[CACHE_KEY] = tokens
    return tokens


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_tools(tools: Iterable[ToolSpec]) -> int:
    return sum(estimate_tool(spec) for spec in tools)


_tool_estimates: dict[tuple[str, str, int], tuple[dict[str, object], int]] = {}


def estimate_tool(spec: ToolSpec) -> int:
    """Tokens one tool definition costs (memoised: specs are rebuilt rarely, sent every turn)."""
    key = (spec.name, spec.description, id(spec.parameters))
    hit = _tool_estimates.get(key)
    if hit is not None and hit[0] is spec.parameters:  # the id was not reused by another dict
        return hit[1]
    schema = json.dumps(spec.parameters, separators=(",", ":"))
    tokens = TOOL_CALL_OVERHEAD + estimate_text(spec.name) + estimate_text(spec.description)
    tokens += estimate_text(schema)
    if len(_tool_estimates) > 4096:
        _tool_estimates.clear()
    _tool_estimates[key] = (spec.parameters, tokens)
    return tokens


def estimate_request(request: ModelRequest) -> int:
    """Input tokens of a request by the raw estimate (no correction)."""
    return REQUEST_OVERHEAD + estimate_messages(request.messages) + estimate_tools(request.tools)


class TokenCounter:
    """A per-run estimator that learns the provider's real ratio from reported usage."""

    MIN_SAMPLE = 64  # tiny requests say little about the ratio
    MIN_RATIO, MAX_RATIO = 0.5, 4.0

    def __init__(self) -> None:
        self.ratio = 1.0
        self.samples = 0
        self._pending: int | None = None

    def count(self, request: ModelRequest) -> int:
        """Corrected estimate of `request`'s input tokens."""
        return self.correct(estimate_request(request))

    def correct(self, raw_estimate: int) -> int:
        return int(raw_estimate * self.ratio + 0.5)

    def sent(self, request: ModelRequest, raw_estimate: int | None = None) -> None:
        """Remember the raw estimate of the request about to go out (pass it if known)."""
        self._pending = estimate_request(request) if raw_estimate is None else raw_estimate

    def reported(self, input_tokens: int) -> None:
        """The provider's input-token count for the last request sent; updates the ratio."""
        raw, self._pending = self._pending, None
        if raw is None or raw < self.MIN_SAMPLE or input_tokens <= 0:
            return
        observed = min(self.MAX_RATIO, max(self.MIN_RATIO, input_tokens / raw))
        # the first sample replaces the guess; later ones are averaged in so one odd reply
        # (a cache-accounting quirk, a retry) cannot swing every budget
        self.ratio = observed if self.samples == 0 else 0.5 * self.ratio + 0.5 * observed
        self.samples += 1
