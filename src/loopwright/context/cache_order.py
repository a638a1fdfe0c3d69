"""Volatile text after the tool section, for local servers' prompt caches.

A chat template renders the tools after the system message (llama.cpp's Qwen template appends
them to it), so a working directory or a date in the system prompt sits before the tool section
and a run in another directory re-reads the whole prompt (llama.cpp reused 11 % of its cache,
measured on a 2-core CPU: a first reply of minutes). For a local server the per-run part of the
system prompt (after `CACHE_BOUNDARY`: environment, instruction files) goes, in each request
only, at the head of the first user message: the system message and the tools stay byte for byte
the same across runs and directories. The history is not changed. Not in prompt mode: there the
runtime writes the tool section itself, before the per-run part (`tools/prompt_format.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwright.messages import Message
from loopwright.plugins import LoopPlugin
from loopwright.wire.base import split_system

if TYPE_CHECKING:
    from loopwright.messages import ModelRequest
    from loopwright.plugins import RunView


class VolatileAfterTools(LoopPlugin):
    """Moves the per-run part of the system prompt into the first user message of a request.
    The converted pair is kept by the identity of its sources, so later turns send the very
    same message objects (the per-message wire caches keep hitting)."""

    def __init__(self) -> None:
        self._cache: tuple[Message, Message, Message, Message] | None = None

    def for_run(self, run: RunView) -> LoopPlugin:
        return VolatileAfterTools()

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        messages = request.messages
        if not messages or messages[0].role != "system":
            return
        first = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        if first is None:
            return
        system, user = messages[0], messages[first]
        hit = self._cache
        if hit is None or hit[0] is not system or hit[1] is not user:
            static, volatile = split_system(system.content)
            if not volatile:
                return
            hit = self._cache = (system, user, Message(role="system", content=static),
                                 Message(role="user", content=f"{volatile}\n\n{user.content}",
                                         attachments=user.attachments, marks=user.marks))
        messages[0], messages[first] = hit[2], hit[3]
