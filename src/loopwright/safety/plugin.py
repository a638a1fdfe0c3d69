"""What `Agent` adds around tool execution for one run: hooks, policy and approvals, the egress
policy, turn diffs, and the services the built-in tools look up (clarify callback, allowed
workspace roots, egress).

Gate order follows DESIGN §1 step 10: `before_tool` hooks → policy / approval → egress → tool →
`after_tool` hooks."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopwright.builtin.diff import TurnDiffPlugin
from loopwright.builtin.workspace import ALLOWED_ROOTS_SERVICE
from loopwright.hooks import HOOK_NAMES, CommandHook, HookFilter, HookGate, HookPlugin, Hooks
from loopwright.plugins import LoopPlugin
from loopwright.safety.egress import EGRESS_SERVICE, Egress, EgressGate
from loopwright.safety.policy import ApprovalCache, ApprovalCallback, Approver, Policy, PolicyGate
from loopwright.safety.sensitive import PROTECTED_PATHS_SERVICE
from loopwright.safety.shell import parse_command
from loopwright.safety.shell.paths import join_path
from loopwright.tools.execute import ResultFilter, ToolGate


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
    workdir: str | Path | None = None,
    egress_allow: Sequence[str] = (),
) -> SafetyLayers:
    """Build the layers for one run of an agent (the approval cache is the agent's)."""
    approver = Approver(callback=approval, approve_all=approve_all, cache=cache,
                        session_id=session_id)
    layers = SafetyLayers(approver=approver)
    if hooks.before_tool:
        layers.gates.append(HookGate(hooks=hooks))
    layers.gates.append(PolicyGate(policy=policy, approver=approver))
    egress = Egress(allowed=tuple(egress_allow), approver=approver)
    layers.gates.append(EgressGate(egress=egress))
    layers.services[EGRESS_SERVICE] = egress
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
    scripts = hook_scripts(hooks, workdir)
    if scripts:
        layers.services[PROTECTED_PATHS_SERVICE] = scripts
    return layers


def hook_scripts(hooks: Hooks, workdir: str | Path | None) -> list[str]:
    """The existing files that command hooks name (`python3 .hooks/check.py` → that file): the
    model may not rewrite them without approval, or it could rewrite its own guard. Read in
    `workdir` (None: the current directory)."""
    commands = [hook.command for name in HOOK_NAMES for hook in getattr(hooks, name)
                if isinstance(hook, CommandHook)]
    if not commands:  # every run asks: no paths made for an agent without command hooks
        return []
    return script_paths(commands, workdir)


def script_paths(command_lines: Sequence[str], cwd: str | Path | None) -> list[str]:
    """The existing files that shell command lines name (`python3 tools/x.py` → that file), as
    run in `cwd` (None: the current directory): what something outside the sandbox runs."""
    directory = str((Path(cwd) if cwd else Path.cwd()).resolve())
    home = str(Path.home())
    found: list[str] = []
    for text in command_lines:
        script = parse_command(text, cwd=directory, home=home)
        for command in script.commands:
            for word in command.words:
                path = join_path(command.cwd, word.value)
                if path and not word.computed and path not in found and \
                        not path.startswith(("/usr/", "/bin/", "/sbin/")) and \
                        os.path.isfile(path):
                    found.append(path)
    return found
