"""Extension points of the loop. Each feature that is not the loop itself (reminders, compaction,
persistence, hooks, rubric grading, prompt-based tool calls…) is a plugin, so `loop.py` stays the
short driver the design diagram describes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwright.errors import ContextOverflowError
from loopwright.messages import Message, ModelRequest, ModelResponse
from loopwright.wire.stream import DeltaListener

if TYPE_CHECKING:
    from loopwright.loop import RunState
    from loopwright.result import RunResult


class LoopPlugin:
    """Override what you need; every method is a no-op by default.

    Plugins nest like middleware: `before_model` and `text_filter` wrap in list order, while
    `after_model` and `on_answer` run in reverse order (the innermost plugin sees the reply
    first)."""

    async def on_run_start(self, run: RunState) -> None:
        """Once, after the user message is in history and before the first turn."""

    def on_message(self, run: RunState, message: Message) -> None:
        """Every message appended to history, as it is appended (persistence hooks in here)."""

    async def before_model(self, run: RunState, request: ModelRequest) -> None:
        """May edit the outgoing request (ephemeral reminders, tool catalogue, prompt format).
        Editing `run.history` here (pruning, compaction) is allowed too."""

    def text_filter(self, run: RunState, listener: DeltaListener) -> DeltaListener:
        """Wrap the text-delta listener (e.g. to keep tool-call markup out of the visible text)."""
        return listener

    async def after_model(self, run: RunState, response: ModelResponse) -> None:
        """May edit the reply before it is stored (e.g. extract tool calls written as text)."""

    async def on_answer(self, run: RunState, answer: str) -> str | None:
        """The model would finish with `answer`. Return feedback to make it go on, or None."""
        return None

    async def on_context_overflow(self, run: RunState, request: ModelRequest,
                                  error: ContextOverflowError) -> bool:
        """The provider rejected `request` as too long for its window. Shrink the request in
        place and return True to have it sent once more."""
        return False

    def on_compaction(self, run: RunState, parent_session_id: str | None) -> None:
        """Compaction replaced `run.history` (system prompt, task, summary, recent tail); the
        run keeps its `session_id` (`parent_session_id` is None). Persistence starts the
        session's next epoch from `run.history` here, keeping the older one as its lineage."""

    async def on_run_end(self, run: RunState, result: RunResult) -> None:
        """Once, after the terminal result is known (also for errors and cancels)."""
