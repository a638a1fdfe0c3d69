"""Retry policy: which failures are retried, how long to wait, and when to give up."""

from __future__ import annotations

import dataclasses
import email.utils
import random
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopwright import messages
from loopwright.messages import ModelRequest
from loopwright.notes import EMPTY_REPLY, EMPTY_REPLY_TO, render, restated
from loopwright.notes import text as note_text
from loopwright.settings import DEFAULTS

if TYPE_CHECKING:
    import httpx

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# 5xx that describe the server or the network, not a passing failure: not implemented, an HTTP
# version it does not speak, a captive portal's login; the same request gets the same answer
NEVER_HEALING_STATUS = frozenset({501, 505, 511})


@dataclass(kw_only=True, frozen=True)
class RetryPolicy:
    """Exponential backoff: `base_delay` doubling up to `max_delay`, `attempts` tries in all.

    A server-demanded pause (Retry-After / retry-after-ms) is honoured exactly; one longer than
    `max_pause` is not waited for but surfaces as an error.
    """

    attempts: int = DEFAULTS.retry_attempts
    base_delay: float = DEFAULTS.retry_base_delay
    max_delay: float = DEFAULTS.retry_max_delay
    max_pause: float = DEFAULTS.retry_max_pause
    jitter: float = 0.1

    def backoff(self, retry_number: int) -> float:
        """The pause before retry `retry_number` (1-based), without a server demand."""
        delay: float = min(self.base_delay * 2.0 ** (retry_number - 1), self.max_delay)
        if self.jitter:
            delay *= 1 + random.uniform(-self.jitter, self.jitter)
        return max(0.0, delay)


# what servers write when the request itself is wrong, whatever status they send it with
# (llama.cpp answers 500 for a history it cannot parse)
_MALFORMED_REQUEST_HINTS = ("failed to parse tool call arguments", "failed to parse messages",
                            "invalid_request_error",
                            "roles must alternate")  # strict chat templates (Mistral, Gemma)
_MALFORMED_FIELD = re.compile(r"""\bmessages(?:\.\d+)?(?:\.[\w\[\]]+)*: """)


def is_malformed_request(status: int, body: str) -> bool:
    """True when an error body says the request itself is malformed (not a passing failure)."""
    if status not in (400, 422) and (status < 500 or status == 529):
        return False  # auth, not-found, rate limits, overload and size limits mean other things
    lowered = body.lower()
    return (any(hint in lowered for hint in _MALFORMED_REQUEST_HINTS)
            or _MALFORMED_FIELD.search(body) is not None)


def is_retryable_status(status: int, body: str = "") -> bool:
    if status in RETRYABLE_STATUS or (status >= 500 and status not in NEVER_HEALING_STATUS):
        return True
    return "overloaded" in body.lower()


def demanded_pause(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `Retry-After`."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def with_empty_reply_nudge(request: ModelRequest) -> ModelRequest:
    """The request to retry after an empty reply: the same one plus a short note, because at low
    temperature the very same bytes get the very same empty reply. The note is not history. After
    other turns (tool results) it restates the user's request, when the request carries it."""
    notes = list(request.messages)
    if notes and notes[-1].role == "user":  # merged: some chat templates demand alternation
        notes[-1] = messages.user(f"{notes[-1].content}\n\n{note_text(EMPTY_REPLY)}")
    elif request.user_request.strip():
        notes.append(messages.user(render(EMPTY_REPLY_TO,
                                          request=restated(request.user_request))))
    else:
        notes.append(messages.user(note_text(EMPTY_REPLY)))
    return dataclasses.replace(request, messages=notes)
