"""Every context budget, sized from the active provider's window.

One `ContextBudget` per run. It follows the provider chain: after a fallback the budgets are those
of the provider now answering. Shares, of the window in tokens:

- `COMPACT_AT` (50 %): preflight threshold; over it, stale tool outputs are pruned, then earlier
  turns compacted;
- `HARD_AT` (85 %, lower when `max_tokens` needs the room): the request must end up under it;
- `TAIL_SHARE` (20 %): the recent tail kept verbatim by pruning and compaction;
- `TOOL_OUTPUT_SHARE` (25 %): a single tool result above it is spilled to a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopwright.endpoints.fallback import ProviderChain
from loopwright.endpoints.probe import DEFAULT_LOCAL_WINDOW, WindowInfo
from loopwright.errors import ContextOverflowError

COMPACT_AT = 0.50
HARD_AT = 0.85
TAIL_SHARE = 0.20
TOOL_OUTPUT_SHARE = 0.25
SUMMARY_SHARE = 0.10
MIN_TOOL_OUTPUT_CHARS = 2_000
MAX_TOOL_OUTPUT_CHARS = 64_000  # even a huge window gains little from one giant tool result
MAX_SUMMARY_TOKENS = 4_000
CHARS_PER_TOKEN = 4
ROOM_MARGIN_SHARE, ROOM_MARGIN_TOKENS = 0.15, 256  # the estimate's error, kept off the reply
MIN_OUTPUT_ROOM = 256


@dataclass(kw_only=True)
class ContextBudget:
    """Budgets for one run; all in tokens except `tool_output_chars`."""

    windows: list[WindowInfo] = field(default_factory=list)
    # the agent's own list (`windows` is the run's copy): a window the provider named is kept
    # there, so the agent's later runs do not send the request it rejected again
    agent_windows: list[WindowInfo] | None = None
    chain: ProviderChain | None = None
    max_tokens: int | None = None  # the run's output-token limit, if set
    compact_at: float = COMPACT_AT
    hard_at: float = HARD_AT

    @property
    def info(self) -> WindowInfo:
        """The window of the provider answering now."""
        if not self.windows:
            return WindowInfo(tokens=DEFAULT_LOCAL_WINDOW, source="default")
        return self.windows[self._active()]

    def _active(self) -> int:
        """Where the answering provider's window is in `windows` (which is not empty)."""
        if len(self.windows) == 1 or self.chain is None:  # one provider: it is answering
            return 0
        return min(self.chain.active, len(self.windows) - 1)

    def told_by_own(self, error: ContextOverflowError) -> bool:
        """Whether `error` came from the run's own provider chain (not from a model a call was
        routed to, whose window is another)."""
        return self.chain is None or self.chain.overflow is error

    def learn(self, tokens: int, source: str, *, keep: bool) -> None:
        """The active provider's window is smaller than we thought (it said so). `keep`: the
        agent keeps it for its later runs (the provider named the number, `told_by_own`); else
        it is this run's only."""
        info = self.info
        learned = WindowInfo(tokens=tokens, source=source, model=info.model,
                             provider=info.provider, base_url=info.base_url)
        if not self.windows:
            self.windows.append(learned)
            return
        at = self._active()
        self.windows[at] = learned
        kept = self.agent_windows
        if keep and kept is not None and at < len(kept) and tokens < kept[at].tokens:
            kept[at] = learned

    @property
    def window(self) -> int:
        """The active provider's window in tokens (read a few times a turn)."""
        return self.info.tokens

    @property
    def threshold(self) -> int:
        """Over this many input tokens, prune and then compact."""
        return int(self.window * self.compact_at)

    @property
    def hard_limit(self) -> int:
        """The request must end up under this (room is left for the reply)."""
        limit = int(self.window * self.hard_at)
        if self.max_tokens:
            limit = min(limit, self.window - self.max_tokens)
        return max(limit, self.threshold)

    def output_room(self, input_tokens: int) -> int:
        """What the window leaves for the reply after `input_tokens` (estimated), with a
        margin for the estimate's error; never below `MIN_OUTPUT_ROOM`."""
        margin = int(input_tokens * ROOM_MARGIN_SHARE) + ROOM_MARGIN_TOKENS
        return max(MIN_OUTPUT_ROOM, self.window - input_tokens - margin)

    @property
    def tail_tokens(self) -> int:
        """How much of the most recent history stays verbatim."""
        return int(self.window * TAIL_SHARE)

    @property
    def summary_tokens(self) -> int:
        """Output-token limit of the compaction summary."""
        return max(256, min(MAX_SUMMARY_TOKENS, int(self.window * SUMMARY_SHARE)))

    @property
    def tool_output_chars(self) -> int:
        """A tool result longer than this is spilled to a file and previewed."""
        chars = int(self.window * TOOL_OUTPUT_SHARE * CHARS_PER_TOKEN)
        return max(MIN_TOOL_OUTPUT_CHARS, min(MAX_TOOL_OUTPUT_CHARS, chars))
