"""The narrated-but-not-called nudge.

Local models often end a reply with "I'll read the file now." and emit no call, which would end
the run with a promise instead of an answer. When a final reply ends by announcing a tool action,
the model is told once to make the call (or answer). At most one nudge per run: a model that
narrates again after being nudged is taken at its word, so the run can never loop on this.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from loopwright.plugins import LoopPlugin

if TYPE_CHECKING:
    from loopwright.plugins import RunView

_ACTION = (
    r"(?:use|call|run|execute|invoke|read|open|check|look|search|grep|list|inspect|examine|view"
    r"|fetch|create|write|edit|update|modify|query|try|start|load|scan|explore|browse|find"
    r"|compute|calculate|test|install|delete|remove|rename|move|patch|apply)"
)
_NARRATION = re.compile(
    r"\b(?:I['’]ll|I will|I am going to|I['’]m going to|I shall|let me|let['’]s|now I['’]ll"
    r"|next,? I['’]ll|first,? I['’]ll|I need to|I['’]m about to|I am about to)"
    r"\s+(?:now\s+|first\s+|quickly\s+|go ahead and\s+|just\s+|then\s+)*" + _ACTION + r"\b",
    re.IGNORECASE,
)
_TAIL_CHARS = 300  # an announcement is the end of a reply, not something said along the way


def narrates_tool_use(text: str) -> bool:
    """True when the reply ends by announcing a tool action ("Let me run the tests.") rather
    than answering. Only the last paragraph (at most 300 characters) is looked at."""
    stripped = text.strip()
    if not stripped or stripped.endswith("?"):
        return False
    tail = stripped.rsplit("\n\n", 1)[-1][-_TAIL_CHARS:]
    return _NARRATION.search(tail) is not None


class NarrationNudge(LoopPlugin):
    """Gives one corrective retry to a final reply that says it will use a tool but calls none."""

    def __init__(self, *, prompt_mode: bool, has_tools: Callable[[], bool]) -> None:
        self.prompt_mode = prompt_mode
        self.has_tools = has_tools
        self.nudged = False  # this run's one nudge was given (a run gets its own object)

    def for_run(self, run: RunView) -> LoopPlugin:
        return NarrationNudge(prompt_mode=self.prompt_mode, has_tools=self.has_tools)

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        if self.nudged or not self.has_tools():
            return None
        if not narrates_tool_use(answer):
            return None
        self.nudged = True
        run.status("narration_nudge", "the reply announced a tool call but made none; asking "
                   "the model to make it", {})
        how = ("write the <tool_call> block now" if self.prompt_mode
               else "make the tool call now (a real tool call, not a description of one)")
        return (
            "You said you would use a tool, but your reply contained no tool call, so nothing "
            f"ran. If you need the tool, {how}; otherwise give your final answer."
        )
