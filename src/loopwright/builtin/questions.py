"""`clarify`: ask the user a question mid-run, through the callback given as `Agent(clarify=...)`.

The callback gets the question and the suggested options (possibly empty) and returns the answer;
it may be sync or async. It is found in `ctx.services["clarify"]`. Without one, the tool tells the
model that no user is available, so it proceeds on a stated assumption instead of waiting forever.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

from loopwright.errors import ToolError
from loopwright.tools.base import ToolContext, tool

CLARIFY_SERVICE = "clarify"
ClarifyCallback = Callable[[str, list[str]], str | Awaitable[str]]


@tool(read_only=True, interactive=True, tags={"interaction"})
async def clarify(question: str, ctx: ToolContext, options: list[str] | None = None) -> str:
    """Ask the user a question when you cannot proceed without their decision (an ambiguous
    requirement, a choice with real trade-offs). Do not ask what you can find out yourself.

    Args:
        question: The question, self-contained and specific.
        options: Suggested answers the user can pick from (optional).
    """
    callback = ctx.services.get(CLARIFY_SERVICE)
    if callback is None:
        raise ToolError("no user is available to answer questions in this run. Make the most "
                        "reasonable assumption, say which one you made, and continue.")
    choices = list(options or [])
    if inspect.iscoroutinefunction(callback):
        answer = await callback(question, choices)
    else:
        answer = await asyncio.to_thread(callback, question, choices)
        if inspect.isawaitable(answer):
            answer = await answer
    text = str(answer or "").strip()
    if not text:
        return "The user gave no answer. Make a reasonable assumption, state it, and continue."
    return f"The user answered: {text}"
