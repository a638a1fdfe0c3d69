"""Model-family quirks, kept apart from wire formats and endpoints.

A profile says what a family of models can and cannot do; adapters and the loop consult it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(kw_only=True, frozen=True)
class Profile:
    """What is peculiar about a model family. The wire adapters read it when they build a request
    (`build_body(..., profile=)`); the agent reads `supports_tools` and `supports_json_schema`."""

    family: str = "generic"
    parallel_tool_calls: bool = True  # False: ask for one call per reply
    supports_tools: bool = True  # False: tool calls go through the prompt (prompt mode)
    supports_system_role: bool = True  # False: the system prompt opens the first user message
    supports_images: bool = True  # False: an image in the history is an error before sending
    supports_temperature: bool = True  # reasoning models take only the default
    supports_reasoning_effort: bool = False
    supports_json_schema: bool = False  # OpenAI's strict `json_schema` response format
    max_tokens_field: str = "max_tokens"  # Chat Completions' name for the output limit
    reasoning_field: str = "reasoning_effort"  # Chat Completions: or "reasoning" ({"effort"})
    context_window: int | None = None  # the family's usual window when nothing better is known
    local: bool = False
    # a hosted frontier model that calls tools natively: under `review = "auto"` it gets only
    # the structural review checks. Read from the model's name, never from the endpoint's
    # address (`claude-sonnet-4-5` behind a proxy on 127.0.0.1 is still one); an unknown name
    # counts as small (local servers name their models freely)
    frontier: bool = False
    # an open-weights family most often run small on a local server (Qwen, Llama, …): the review
    # checks written for small local models (`Check.small_models_only`) run for it under
    # `review = "auto"`; not for a frontier family, nor for an unknown name
    small_local: bool = False
    # how a native call begins in the family's chat template: a reply begun with it for the
    # model (a server that continues a reply it is given: llama.cpp) is written as a call
    # (`review/call_after_error.py`); "" when not known
    call_opening: str = ""


QWEN2_CALL_OPENING = '<tool_call>\n{"name": "'
"""How Qwen2 and Qwen2.5's chat template writes a call: the tag, then the object, name first."""

GENERIC = Profile()

# One row per family; the first whose prefix matches wins, so narrower prefixes come first.
_FAMILIES: tuple[tuple[tuple[str, ...], Profile], ...] = (
    (("o1-mini", "o1-preview"), Profile(
        family="openai-reasoning-early", supports_tools=False, supports_system_role=False,
        supports_images=False, supports_temperature=False,
        max_tokens_field="max_completion_tokens")),
    (("o1", "o3", "o4", "gpt-5"), Profile(
        family="openai-reasoning", supports_reasoning_effort=True, supports_temperature=False,
        max_tokens_field="max_completion_tokens", supports_json_schema=True, frontier=True)),
    (("gpt-4.1",), Profile(family="gpt-4.1", context_window=1_047_576, supports_json_schema=True,
                           frontier=True)),
    (("gpt-4o",), Profile(family="gpt-4o", context_window=128_000, supports_json_schema=True,
                          frontier=True)),
    (("claude",), Profile(family="claude", supports_reasoning_effort=True, context_window=200_000,
                          frontier=True)),
    (("deepseek-r1", "qwq"), Profile(family="reasoning-local", local=True, supports_images=False,
                                     small_local=True)),
    (("qwen2",), Profile(family="open-weights", small_local=True,
                         call_opening=QWEN2_CALL_OPENING)),
    (("qwen", "llama", "mistral", "gemma", "phi", "hermes", "deepseek"),
     Profile(family="open-weights", small_local=True)),
)


@functools.lru_cache(maxsize=256)  # asked for every run's clients: ~500 bytecodes a name
def profile_for(model: str) -> Profile:
    """The profile of the family a model name belongs to (generic when unknown)."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefixes, profile in _FAMILIES:
        if name.startswith(prefixes) or any(f"-{p}" in name or f"/{p}" in name for p in prefixes):
            return profile
    return GENERIC


def takes_reasoning_effort(profile: Profile) -> bool:
    """Send `reasoning_effort`? Not to a known family without it (OpenAI rejects it for
    gpt-4o); an unknown model gets it, as the user asked."""
    return profile.supports_reasoning_effort or profile.family == GENERIC.family
