"""Wires the context economy into a run: budgets, output bounding, reminders, compaction.

`Agent` calls `context_layers()` once per run; everything here is sized from the windows
`endpoints/probe.py` found for the provider chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwright.context.compaction import CompactionPlugin
from loopwright.context.reminders import ReminderPlugin
from loopwright.context.summary import SummaryCooldown
from loopwright.context.window import CHARS_PER_TOKEN, ContextBudget
from loopwright.endpoints.fallback import ProviderChain
from loopwright.endpoints.probe import DEFAULT_LOCAL_WINDOW, WindowInfo
from loopwright.plugins import LoopPlugin
from loopwright.settings import Settings
from loopwright.tools.execute import ResultFilter
from loopwright.tools.output import SPILL_ROOT_SERVICE, OutputBounder, spill_directory

INSTRUCTIONS_SHARE = 0.10  # of the window, for project and user instruction files
MAX_INSTRUCTION_CHARS = 16_000


@dataclass(kw_only=True)
class ContextLayers:
    """What one run gets: plugins to put first, result filters to put last, services."""

    budget: ContextBudget
    plugins: list[LoopPlugin] = field(default_factory=list)
    filters: list[ResultFilter] = field(default_factory=list)
    services: dict[str, Any] = field(default_factory=dict)


def context_layers(settings: Settings, windows: list[WindowInfo], chain: ProviderChain | None,
                   *, summary_cooldown: SummaryCooldown | None = None,
                   prompt_mode: bool = False) -> ContextLayers:
    """Budgets, the output bounder, and (unless switched off) compaction and reminders."""
    budget = ContextBudget(windows=list(windows), agent_windows=windows, chain=chain,
                           max_tokens=settings.max_tokens)
    spill = spill_directory(settings.cache_dir)
    layers = ContextLayers(budget=budget, services={"context": budget, SPILL_ROOT_SERVICE: spill})
    layers.filters.append(OutputBounder(directory=spill,
                                        max_chars=lambda: budget.tool_output_chars))
    if settings.compaction:  # first: later plugins see the request it leaves
        layers.plugins.append(CompactionPlugin(
            budget=budget, spill_dir=spill,
            cooldown=summary_cooldown or SummaryCooldown(settings.summary_cooldown)))
    if settings.reminders:
        layers.plugins.append(ReminderPlugin())
    if chain is not None and small_window(windows, chain) and not prompt_mode:
        from loopwright.context.cache_order import VolatileAfterTools

        layers.plugins.append(VolatileAfterTools())  # last: the others see the system prompt
    return layers


def small_window(windows: list[WindowInfo], chain: ProviderChain) -> bool:
    """A local server that says (or the user set) its window is at most `prompt.SMALL_WINDOW`
    tokens: the compact prompt, with the per-run part after the tools (context/prompt.py). A
    window only guessed (no probe answered) does not count."""
    from loopwright.context.prompt import SMALL_WINDOW

    if not windows or not windows[0].source.startswith(("probe", "explicit")):
        return False
    return chain.current.endpoint.is_local and windows[0].tokens <= SMALL_WINDOW


def instruction_chars(windows: list[WindowInfo]) -> int:
    """How much of the system prompt project and user instruction files may take."""
    window = windows[0].tokens if windows else DEFAULT_LOCAL_WINDOW
    return max(1_000, min(MAX_INSTRUCTION_CHARS,
                          int(window * INSTRUCTIONS_SHARE * CHARS_PER_TOKEN)))
