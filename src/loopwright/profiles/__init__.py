"""Model-family quirks, kept apart from wire formats and endpoints.

A profile says what a family of models can and cannot do; adapters and the loop consult it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
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
    # is not known to be small either (`review.plan.reads_text_calls`)
    frontier: bool = False
    # an open-weights family most often run small on a local server (Qwen, Llama, …), at no
    # more than `_SMALL_BILLIONS` parameters where the name gives a size: the review checks
    # written for small local models (`Check.small_models_only`) run for it under
    # `review = "auto"`; not for a frontier family, nor for an unknown name
    small_local: bool = False
    # how a native call begins in the family's chat template: a reply begun with it for the
    # model (a server that continues a reply it is given: llama.cpp) is written as a call
    # (`review/call_after_error.py`); "" when not known
    call_opening: str = ""


QWEN2_CALL_OPENING = '<tool_call>\n{"name": "'
"""How Qwen2 and Qwen2.5's chat template writes a call: the tag, then the object, name first."""

GENERIC = Profile()
_SMALL_BILLIONS = 32.0
"""The largest open-weights model, in billions of parameters (`7b`, `1.5B`, `480b-a35b` counts
its total), that the review treats as small: 70B and up is run on servers, not laptops."""
# a size in a model's name, not part of a version or a quantisation (`q4_k_m`, `a35b` of MoE)
_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)b(?![a-z0-9])")
# Bedrock's model ids: an optional region, the vendor, a dot (`us.anthropic.claude-…`)
_BEDROCK = re.compile(r"^(?:[a-z]{2,6}\.)?(?:anthropic|meta|mistral|amazon|cohere|ai21|deepseek|"
                      r"openai|qwen|writer)\.")

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
    # hosted only, served by their makers' APIs: never small on this machine; reasoning effort
    # sent to Gemini and Grok as to any unknown model, not to the open-weights makers' APIs
    (("gemini", "grok"), Profile(family="hosted", supports_reasoning_effort=True,
                                 frontier=True)),
    (("deepseek-chat", "deepseek-reasoner", "mistral-large", "mistral-medium", "qwen-max",
      "qwen-plus", "qwen-turbo", "qwen3-max"), Profile(family="hosted-open-weights",
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
    """The profile of the family a model name belongs to (generic when unknown). Names as users
    write them: any case, spaces around, a provider's path (`openai/gpt-4.1`,
    `models/gemini-2.5-flash`), a Bedrock id (`us.anthropic.claude-sonnet-4-5-v1:0`), a file
    (`./models/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf`) or an Ollama tag (`qwen2.5-coder:1.5b`).
    A Bedrock id or a name in a maker's API convention (`mistral-small-latest`) is hosted, and
    an open-weights model larger than `_SMALL_BILLIONS` is not small."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    bedrock = _BEDROCK.match(name)
    if bedrock is not None:
        name = name[bedrock.end():]
    profile = _family(name)
    hosted = bedrock is not None or name.endswith("-latest")
    if profile.small_local and (hosted or _billions(name) > _SMALL_BILLIONS):
        return dataclasses.replace(profile, small_local=False)
    return profile


def _family(name: str) -> Profile:
    for prefixes, profile in _FAMILIES:
        if name.startswith(prefixes) or any(f"-{p}" in name or f"/{p}" in name for p in prefixes):
            return profile
    return GENERIC


def _billions(name: str) -> float:
    """The size a model's name gives, in billions of parameters (0 when it gives none)."""
    return max((float(size) for size in _SIZE.findall(name)), default=0.0)


def takes_reasoning_effort(profile: Profile) -> bool:
    """Send `reasoning_effort`? Not to a known family without it (OpenAI rejects it for
    gpt-4o); an unknown model gets it, as the user asked."""
    return profile.supports_reasoning_effort or profile.family == GENERIC.family
