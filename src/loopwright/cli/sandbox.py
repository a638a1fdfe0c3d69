"""The CLI's one start-up line about the sandbox (stderr): loud when it is off or missing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwright.safety.sandbox import Availability, SandboxPolicy, sandbox_availability

if TYPE_CHECKING:
    from loopwright.agent import Agent


def sandbox_notice(policy: SandboxPolicy, availability: Availability) -> str | None:
    """The line to print once at start, or None when commands are sandboxed as asked."""
    if not policy.enabled:
        return ("WARNING: the sandbox is OFF (sandbox mode full-access): commands the model runs "
                "have your full rights over files, processes and the network.")
    if not availability.available:
        return (f"no sandbox can be made here ({availability.problem}); every command that could "
                "change something needs approval, and is denied when nobody can approve it.")
    return None


async def agent_sandbox_notice(agent: Agent) -> str | None:
    """`sandbox_notice` for an agent, None when none of its tools starts processes."""
    if not any("shell" in tool.tags for tool in agent.registry):
        return None
    return sandbox_notice(agent.sandbox, await sandbox_availability(agent.sandbox))
