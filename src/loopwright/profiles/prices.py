"""An offline price table for well-known hosted models, and the one cost formula.

Prices are list prices in USD per million tokens. A model that is not in the table has no price:
its cost is `None`, never a guess (local models, unknown providers, new releases).

Usage convention (every wire adapter normalises to it): `input_tokens` counts the whole prompt,
cached parts included; `cache_read_tokens` / `cache_write_tokens` say how much of it was read from
or written to the provider's prompt cache; `reasoning_tokens` are part of `output_tokens`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from loopwright.messages import Usage


@dataclass(kw_only=True, frozen=True, slots=True)
class Price:
    """USD per million tokens. A cache price of `None` means the input price applies."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


# Keys are model-name prefixes; the longest matching prefix wins, so dated snapshots
# ("gpt-4o-mini-2024-07-18", "claude-sonnet-4-5-20250929") find their family's price.
PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o": Price(input=2.50, output=10.00, cache_read=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.60, cache_read=0.075),
    "gpt-4.1": Price(input=2.00, output=8.00, cache_read=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cache_read=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cache_read=0.025),
    "gpt-5": Price(input=1.25, output=10.00, cache_read=0.125),
    "gpt-5-mini": Price(input=0.25, output=2.00, cache_read=0.025),
    "gpt-5-nano": Price(input=0.05, output=0.40, cache_read=0.005),
    "o3": Price(input=2.00, output=8.00, cache_read=0.50),
    "o3-mini": Price(input=1.10, output=4.40, cache_read=0.55),
    "o4-mini": Price(input=1.10, output=4.40, cache_read=0.275),
    # Anthropic (cache writes are the 5-minute ephemeral price)
    "claude-opus-4": Price(input=15.00, output=75.00, cache_read=1.50, cache_write=18.75),
    "claude-opus-4-5": Price(input=5.00, output=25.00, cache_read=0.50, cache_write=6.25),
    "claude-sonnet-4": Price(input=3.00, output=15.00, cache_read=0.30, cache_write=3.75),
    "claude-3-7-sonnet": Price(input=3.00, output=15.00, cache_read=0.30, cache_write=3.75),
    "claude-3-5-sonnet": Price(input=3.00, output=15.00, cache_read=0.30, cache_write=3.75),
    "claude-haiku-4-5": Price(input=1.00, output=5.00, cache_read=0.10, cache_write=1.25),
    "claude-3-5-haiku": Price(input=0.80, output=4.00, cache_read=0.08, cache_write=1.00),
}


def _bare_name(model: str) -> str:
    """`anthropic:claude-x`, `openai/gpt-4o` → the model's own name, lower case."""
    name = model.strip().lower()
    provider, colon, rest = name.partition(":")
    if colon and provider.replace("-", "").isalpha():  # "qwen2.5:7b" is an Ollama tag, kept
        name = rest
    return name.rsplit("/", 1)[-1]


@functools.lru_cache(maxsize=64)  # asked twice per model call, for the same few names
def price_for(model: str) -> Price | None:
    """The list price of `model`, or `None` when the table does not know it."""
    name = _bare_name(model)
    best: str | None = None
    for prefix in PRICES:
        if (name == prefix or name.startswith(prefix + "-")) and (
            best is None or len(prefix) > len(best)
        ):
            best = prefix
    return PRICES[best] if best is not None else None


def cost_of(model: str, usage: Usage) -> float | None:
    """USD cost of `usage` on `model`; `None` when the price or the token counts are unknown."""
    price = price_for(model)
    if price is None:
        return None
    if usage.requests and not (usage.input_tokens or usage.output_tokens):
        return None  # the provider reported no usage: zero would be a made-up number
    cache_read = min(usage.cache_read_tokens, usage.input_tokens)
    cache_write = min(usage.cache_write_tokens, usage.input_tokens - cache_read)
    uncached = usage.input_tokens - cache_read - cache_write
    total = (
        uncached * price.input
        + cache_read * (price.input if price.cache_read is None else price.cache_read)
        + cache_write * (price.input if price.cache_write is None else price.cache_write)
        + usage.output_tokens * price.output
    )
    return total / 1_000_000


class CostMeter:
    """Adds up the cost of a run call by call; `total` turns `None` once one call is unpriced."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total: float | None = 0.0

    def add(self, model: str, usage: Usage) -> None:
        if self.total is not None:
            self.charge(cost_of(model, usage))

    def charge(self, cost: float | None) -> None:
        """Add a cost already worked out (`cost_of`); None: unpriced from now on."""
        if self.total is not None:
            self.total = None if cost is None else self.total + cost
