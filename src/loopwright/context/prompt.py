"""System prompt assembly: named sections, a static cacheable prefix, then the per-run part."""

from __future__ import annotations

from loopwright.wire.base import CACHE_BOUNDARY

IDENTITY = (
    "You are a capable assistant working inside an agent loop. Work step by step: use the tools "
    "you have when they help, read their results carefully, and stop calling tools once you can "
    "answer. Answer the user's latest request directly and concisely."
)
TOOL_GUIDANCE = (
    "When you call a tool, pass arguments as one JSON object that matches its schema. Independent "
    "read-only calls may be made together in one reply. If a tool returns an error, read it and "
    "correct the call instead of repeating it unchanged."
)
NO_TOOLS = (
    "You have no tools in this conversation. Do not claim to have run commands, read files or "
    "browsed the web; say what you would need instead."
)


def build_system_prompt(*, user_prompt: str | None, has_tools: bool,
                        per_run_sections: list[str] | None = None) -> str:
    """The system prompt: static prefix (identical across turns and runs), boundary, per-run part.

    A user-supplied `system_prompt` replaces the identity section; the rest stays.
    """
    static = [user_prompt or IDENTITY, TOOL_GUIDANCE if has_tools else NO_TOOLS]
    dynamic = [s for s in per_run_sections or [] if s]
    prompt = "\n\n".join(static)
    if dynamic:
        prompt += CACHE_BOUNDARY + "\n\n".join(dynamic)
    return prompt
