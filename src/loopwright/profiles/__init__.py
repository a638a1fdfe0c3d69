"""Model-family quirks, kept apart from wire formats and endpoints.

A profile says what a family of models can and cannot do; adapters and the loop consult it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True, frozen=True)
class Profile:
    """What is peculiar about a model family."""

    family: str = "generic"
    parallel_tool_calls: bool = True
    supports_tools: bool = True
    supports_system_role: bool = True
    supports_reasoning_effort: bool = False
    max_tokens_field: str = "max_tokens"
    context_window: int | None = None  # the family's usual window when nothing better is known
    local: bool = False


_FAMILIES: tuple[tuple[tuple[str, ...], Profile], ...] = (
    (("o1", "o3", "o4", "gpt-5"), Profile(family="openai-reasoning", supports_reasoning_effort=True,
                                          max_tokens_field="max_completion_tokens")),
    (("gpt-4.1",), Profile(family="gpt-4.1", context_window=1_047_576)),
    (("gpt-4o",), Profile(family="gpt-4o", context_window=128_000)),
    (("claude",), Profile(family="claude", supports_reasoning_effort=True, context_window=200_000)),
    (("deepseek-r1", "qwq"), Profile(family="reasoning-local", local=True)),
    (("qwen", "llama", "mistral", "gemma", "phi", "hermes", "deepseek"),
     Profile(family="open-weights")),
)


def profile_for(model: str) -> Profile:
    """The profile of the family a model name belongs to (generic when unknown)."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefixes, profile in _FAMILIES:
        if name.startswith(prefixes) or any(f"-{p}" in name or f"/{p}" in name for p in prefixes):
            return profile
    return Profile()
