"""The agents a server runs: one per (model, tool subset) a client asked for, built from the same
options as `loopwright run` (config, sandbox, policy, store), sharing the server's session store
and answering approvals over the wire.

An agent is reused by every run with the same choice, so its provider resolution, context-window
probe, sandbox probe, MCP servers and "always" approvals are shared; runs never share history.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.serve.approvals import WireApprovals
    from loopwright.store import SessionStore

MAX_AGENTS = 32
"""Distinct (model, tools) choices kept at once; an idle one is closed to make room."""

AgentKey = tuple[str | None, tuple[str, ...] | None]


class PoolFull(ConfigError):
    """Every agent slot is busy with live runs."""


class AgentPool:
    """Builds and keeps agents; `options` are the `Agent` keyword arguments of the CLI flags."""

    def __init__(self, options: dict[str, Any], *, store: SessionStore | None,
                 approvals: WireApprovals, max_agents: int = MAX_AGENTS) -> None:
        self.options = dict(options)
        self.store = store
        self.approvals = approvals
        self.max_agents = max_agents
        self.tool_names = [tool.name for tool in self.options.get("tools", [])]
        self._agents: OrderedDict[AgentKey, Agent] = OrderedDict()
        self._lock = asyncio.Lock()

    async def get(self, model: str | None, tools: Sequence[str] | None) -> Agent:
        """The agent for this choice (`None`: the server's default), built on first use."""
        key: AgentKey = (model or None, self._check_tools(tools))
        async with self._lock:
            agent = self._agents.get(key)
            if agent is None:
                await self._make_room()
                # reads config files and probes paths: off the event loop
                agent = await asyncio.to_thread(self._build, key)
                self._agents[key] = agent
            self._agents.move_to_end(key)
            return agent

    def _check_tools(self, tools: Sequence[str] | None) -> tuple[str, ...] | None:
        if tools is None:
            return None
        unknown = sorted(set(tools) - set(self.tool_names))
        if unknown:
            raise ConfigError(f"tools: {', '.join(unknown)} not offered by this server; "
                              f"choose from {', '.join(self.tool_names) or '(none)'}")
        return tuple(name for name in self.tool_names if name in set(tools))

    def _build(self, key: AgentKey) -> Agent:
        from loopwright.agent import Agent

        model, tools = key
        options = dict(self.options)
        options.pop("clarify", None)  # nobody answers questions over the wire yet
        if model is not None:
            options["model"] = model
        if tools is not None:
            options["tools"] = [t for t in self.options.get("tools", []) if t.name in tools]
        options["approval"] = self.approvals
        options["store"] = self.store  # one store for every agent and the sessions API
        return Agent(**options)

    async def _make_room(self) -> None:
        if len(self._agents) < self.max_agents:
            return
        for key, agent in self._agents.items():
            if not agent.live_runs:
                del self._agents[key]
                await agent.aclose()
                return
        raise PoolFull(f"{self.max_agents} different model/tool choices are running; "
                       "wait for one to finish")

    async def aclose(self) -> None:
        for agent in self._agents.values():
            await agent.aclose()
        self._agents.clear()
