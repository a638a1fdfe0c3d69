"""Token accounting without a tokenizer: a cheap estimate, corrected by what the provider reports.

The estimate is about four characters a token for ASCII text and one token a character for other
scripts (CJK, emoji), plus a small overhead per message. `TokenCounter` keeps, per run, the ratio
of the input tokens the provider reported to the estimate of the same request, and applies it, so
budgets track the real tokenizer after the first call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence

from loopwright.attachments import Attachment
from loopwright.messages import Message, ModelRequest, ToolSpec, any_attachments, edits_so_far

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # role markers and separators every chat template adds
TOOL_CALL_OVERHEAD = 8
REQUEST_OVERHEAD = 8
# per-message estimates are memoised in Message.wire_cache under this key (the cache empties
# itself when the message is edited), so each turn only counts new messages
CACHE_KEY = "loopwright.tokens"


def estimate_text(text: str) -> int:
    """Tokens in `text`, roughly."""
    if not text:
        return 0
    if text.isascii():
        return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    # a CJK character takes 3 bytes in UTF-8 and about a token; half the extra bytes counts them
    wide = min(len(text), (len(text.encode("utf-8", "surrogatepass")) - len(text)) // 2)
    return (len(text) - wide + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + wide


def estimate_message(msg: Message) -> int:
    """Tokens one message costs in a request (memoised on the message)."""
    cached = msg.wire_cache.get(CACHE_KEY)
    if cached is not None:
        return int(cached)
    tokens = MESSAGE_OVERHEAD + estimate_text(msg.content)
    if msg.reasoning:
        tokens += estimate_text(msg.reasoning)
    for call in msg.tool_calls:
        tokens += TOOL_CALL_OVERHEAD + estimate_text(call.name) + estimate_text(call.arguments)
    for attachment in msg.attachments:  # by pixels / pages, not by the base64 text
        tokens += attachment.estimate_tokens()
    msg.wire_cache[CACHE_KEY] = tokens
    return tokens


async def measure_attachments(messages: Sequence[Message]) -> None:
    """Measure in a worker thread the attachments whose token cost is not known yet (a path's
    file read whole, a PDF's pages counted), so that the estimates plugins make synchronously
    during a turn never read a file on the event loop. Without attachments: one scan at C speed,
    no thread."""
    if not any_attachments(messages):
        return
    pending = [a for m in messages if m.attachments for a in m.attachments if not a.measured]
    if pending:
        await asyncio.to_thread(_measure, pending)


def _measure(attachments: list[Attachment]) -> None:
    for attachment in attachments:
        attachment.estimate_tokens()  # memoised on the attachment


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(map(estimate_message, messages))  # map: no generator frame a message


def estimate_tools(tools: Iterable[ToolSpec]) -> int:
    return sum(map(estimate_tool, tools))


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


class RunningEstimate:
    """`estimate_messages` for a history that grows by appends: the sum over the messages seen
    last time is kept, so a turn only adds the new ones. The kept sum is used only while the
    history still starts with messages equal to those (identity first, so a C-speed scan) and no
    message with cached forms was edited in place since (`edits_so_far`)."""

    __slots__ = ("_edits", "_messages", "_total")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._total = 0
        self._edits = -1

    def __call__(self, history: list[Message]) -> int:
        known = len(self._messages)
        edits = edits_so_far()
        if edits == self._edits and known <= len(history) and history[:known] == self._messages:
            total = self._total + sum(map(estimate_message, history[known:]))
        else:
            total = sum(map(estimate_message, history))
        self._messages, self._total, self._edits = history[:], total, edits
        return total


class TokenCounter:
    """A per-run estimator that learns the provider's real ratio from reported usage."""

    MIN_SAMPLE = 64  # tiny requests say little about the ratio
    MIN_RATIO, MAX_RATIO = 0.5, 4.0

    def __init__(self) -> None:
        self.ratio = 1.0
        self.samples = 0
        self._pending: int | None = None
        self._running = RunningEstimate()

    def estimate(self, request: ModelRequest) -> int:
        """`estimate_request(request)`, summed incrementally over this run's turns."""
        return REQUEST_OVERHEAD + self._running(request.messages) + estimate_tools(request.tools)

    def count(self, request: ModelRequest) -> int:
        """Corrected estimate of `request`'s input tokens."""
        return self.correct(self.estimate(request))

    def correct(self, raw_estimate: int) -> int:
        return int(raw_estimate * self.ratio + 0.5)

    def sent(self, request: ModelRequest, raw_estimate: int | None = None) -> None:
        """Remember the raw estimate of the request about to go out (pass it if known)."""
        self._pending = self.estimate(request) if raw_estimate is None else raw_estimate

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
