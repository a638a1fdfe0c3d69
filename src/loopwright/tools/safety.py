"""What `Agent` adds around tool execution for one run: hooks, policy and approvals, turn diffs,
and the services the built-in tools look up (clarify callback, allowed workspace roots).

Gate order follows DESIGN §1 step 10: `before_tool` hooks → policy / approval → tool →
`after_tool` hooks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwright.builtin.diff import TurnDiffPlugin
from loopwright.builtin.workspace import ALLOWED_ROOTS_SERVICE
from loopwright.hooks import HookFilter, HookGate, HookPlugin, Hooks
from loopwright.plugins import LoopPlugin
from loopwright.tools.execute import ResultFilter, ToolGate
from loopwright.tools.policy import ApprovalCache, ApprovalCallback, Approver, Policy, PolicyGate


@dataclass(kw_only=True)
class SafetyLayers:
    """The pieces to add to one run's executor, plugins and tool services."""

    gates: list[ToolGate] = field(default_factory=list)
    filters: list[ResultFilter] = field(default_factory=list)
    plugins: list[LoopPlugin] = field(default_factory=list)
    approver: Approver
    services: dict[str, Any] = field(default_factory=dict)


def safety_layers(
    *,
    hooks: Hooks,
    policy: Policy,
    approval: ApprovalCallback | None,
    approve_all: bool,
    cache: ApprovalCache,
    session_id: str,
    clarify: Any = None,
    allowed_roots: list[str] | None = None,
) -> SafetyLayers:
    """Build the layers for one run of an agent (the approval cache is the agent's)."""
    approver = Approver(callback=approval, approve_all=approve_all, cache=cache,
                        session_id=session_id)
    layers = SafetyLayers(approver=approver)
    if hooks.before_tool:
        layers.gates.append(HookGate(hooks=hooks))
    layers.gates.append(PolicyGate(policy=policy, approver=approver))
    if hooks.after_tool:
        layers.filters.append(HookFilter(hooks=hooks))
    if hooks.before_model or hooks.after_model:
        layers.plugins.append(HookPlugin(hooks))
    layers.plugins.append(TurnDiffPlugin())
    if clarify is not None:
        from loopwright.builtin.questions import CLARIFY_SERVICE  # loads the tool: only if used

        layers.services[CLARIFY_SERVICE] = clarify
    if allowed_roots:
        layers.services[ALLOWED_ROOTS_SERVICE] = list(allowed_roots)
    return layers
