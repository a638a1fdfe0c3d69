"""Extension points of the loop. Each feature that is not the loop itself (reminders, compaction,
persistence, hooks, rubric grading, prompt-based tool calls…) is a plugin, so `loop.py` stays the
short driver the design diagram describes.

A plugin sees a run through `RunView`, a narrow typed view: history read-only (changed only by
`append` and `replace_history`), status, usage and cost, the settings plugins need, and the one
way to call the model. State a plugin keeps for one run lives in the object its `for_run()`
returns — never in `tool_state`, which the tools share. The order in which the loop calls the
hooks is the numbered list at the top of `loop.py`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from loopwright.errors import ContextOverflowError
from loopwright.messages import Message, ModelRequest, ModelResponse, Usage
from loopwright.wire.stream import DeltaListener

if TYPE_CHECKING:
    from loopwright.events import Event, StatusKind
    from loopwright.result import RunResult


class RunSettings(Protocol):
    """The run's settings a plugin may read."""

    @property
    def workdir(self) -> Path: ...
    @property
    def max_turns(self) -> int: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def stream(self) -> bool: ...


class RunView(Protocol):
    """What a plugin sees of one run (`run_state.RunState` implements it)."""

    @property
    def run_id(self) -> str: ...
    @property
    def session_id(self) -> str | None:
        """The session's id: one per run, the same through compaction."""
    @property
    def agent_tag(self) -> str:
        """Empty for a top-level run; the child's id for a sub-agent's."""
    @property
    def turn(self) -> int: ...
    @property
    def history(self) -> Sequence[Message]:
        """The conversation so far, read-only; change it with `append` / `replace_history`."""
    @property
    def request(self) -> str:
        """The user's request this run answers: the last user message when it began."""
    @property
    def usage(self) -> Usage:
        """Tokens spent by every model call of the run so far (read it, do not change it)."""
    @property
    def cost(self) -> float | None:
        """USD so far; None once a call's model has no known price."""
    @property
    def model(self) -> str:
        """The model the run's calls go to now (a fallback once the chain moved on)."""
    @property
    def settings(self) -> RunSettings: ...
    @property
    def tool_state(self) -> dict[str, Any]:
        """What the tools share (`ToolContext.state`: read files, todos, pending reminders).
        Read what tools publish there; keep a plugin's own state in its `for_run()` object."""
    @property
    def cancel_requested(self) -> bool: ...

    def append(self, message: Message) -> None:
        """Add a message to the history (every plugin's `on_message` is told)."""

    def replace_history(self, history: list[Message], *, compacted: bool = False) -> None:
        """Replace the whole history (pruning, repair); `compacted=True` says compaction did,
        and every plugin's `on_compaction` is told."""

    def set_aside_answer(self) -> None:
        """Leave the answer just given (from `on_answer`) out of every later request; it stays
        in the history, marked `set_aside` (`Message.marks`). For a reply a small model would
        copy if it saw it again; the feedback then goes as a user turn of its own."""

    def status(self, kind: StatusKind, message: str, data: dict[str, Any] | None = None) -> None:
        """Emit a `status` event."""

    def emit(self, event: Event) -> None:
        """Emit an event of the run (e.g. `partial_output`); the loop's own are emitted by it."""

    async def call_model(self, request: ModelRequest, *, purpose: str) -> ModelResponse:
        """A silent side call (no text reaches the user) through the run's one home for model
        calls (`model_call.ModelCalls`): cancel, retries, fallback, usage, cost and a
        `model_call` record. Raises `RunCancelled` when the run was cancelled meanwhile and
        `ProviderError` when the call failed."""


class LoopPlugin:
    """Override what you need; every method is a no-op by default.

    Plugins nest like middleware: `before_model` and `text_filter` wrap in list order, while
    `after_model` and `on_answer` run in reverse order (the innermost plugin sees the reply
    first). The full order is the numbered list at the top of `loop.py`."""

    def for_run(self, run: RunView) -> LoopPlugin:
        """The object that serves `run`'s hooks: `self` (the default) for a plugin without
        per-run state, else a fresh object holding that state. Called once per run, before
        anything else."""
        return self

    async def on_run_start(self, run: RunView) -> None:
        """Once, after the user message is in history and before the first turn."""

    def on_message(self, run: RunView, message: Message) -> None:
        """Every message appended to history, as it is appended (persistence hooks in here)."""

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        """May edit the outgoing request (ephemeral reminders, tool catalogue, prompt format).
        Changing the history here (pruning, compaction: `run.replace_history`) is allowed too."""

    def text_filter(self, run: RunView, listener: DeltaListener) -> DeltaListener:
        """Wrap the text-delta listener (e.g. to keep tool-call markup out of the visible text)."""
        return listener

    def on_tool_args(self, run: RunView, name: str, delta: str) -> None:
        """A fragment of a tool call's arguments as it streams (`name` may be "" at first)."""

    async def on_results(self, run: RunView, results: list[Message]) -> None:
        """Tool results were just appended (step 15), as soon as each call returned (a parallel
        batch's in call order): nothing else happens in the run before every plugin has seen
        them, so the session recorder makes them durable here."""

    async def after_tools(self, run: RunView) -> None:
        """Every result of the reply's calls is in history (step 15): the batch is complete."""

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        """May edit the reply before it is stored (e.g. extract tool calls written as text)."""

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        """The model would finish with `answer`. Return feedback to make it go on, or None.
        Called once the review stage's answer checks accepted it (`loopwright.review`); a check
        that must run before, or between, the built-in ones is a `review.Check` with a
        `position` (`review_checks`), not a plugin."""
        return None

    async def on_context_overflow(self, run: RunView, request: ModelRequest,
                                  error: ContextOverflowError) -> bool:
        """The provider rejected `request` as too long for its window. Shrink the request in
        place and return True to have it sent once more."""
        return False

    def on_compaction(self, run: RunView) -> None:
        """Compaction replaced the history (system prompt, task, summary, recent tail); the
        run keeps its `session_id`. Persistence starts the session's next epoch from
        `run.history` here, keeping the older one as its lineage."""

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        """Once, after the terminal result is known (also for errors and cancels)."""
