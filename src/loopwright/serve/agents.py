"""The agents a server runs: one per (model, tool subset, output type) a client asked for, built
from the same options as `loopwright run` (config, sandbox, policy, store), sharing the server's
session store and answering approvals over the wire.

Typed output is chosen by name: the server is started with `output_types={"Name": type}` (or
`loopwright serve --output-type Name=module:Class`) and a client asks for `"output_type": "Name"`;
a client never names a Python object itself.

An agent is reused by every run with the same choice, so its provider resolution, context-window
probe, sandbox probe, MCP servers and "always" approvals are shared; runs never share history.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.serve.approvals import WireApprovals
    from loopwright.store import SessionStore

MAX_AGENTS = 32
"""Distinct (model, tools) choices kept at once; an idle one is closed to make room."""

AgentKey = tuple[str | None, tuple[str, ...] | None, str | None]


class PoolFull(ConfigError):
    """Every agent slot is busy with live runs."""


class AgentPool:
    """Builds and keeps agents; `options` are the `Agent` keyword arguments of the CLI flags."""

    def __init__(self, options: dict[str, Any], *, store: SessionStore | None,
                 approvals: WireApprovals, output_types: Mapping[str, Any] | None = None,
                 max_agents: int = MAX_AGENTS) -> None:
        self.options = dict(options)
        self.output_types = checked_output_types(output_types or {})
        self.store = store
        self.approvals = approvals
        self.max_agents = max_agents
        self.tool_names = [tool.name for tool in self.options.get("tools", [])]
        self._agents: OrderedDict[AgentKey, Agent] = OrderedDict()
        self._lock = asyncio.Lock()

    async def get(self, model: str | None, tools: Sequence[str] | None,
                  output_type: str | None = None) -> Agent:
        """The agent for this choice (`None`: the server's default), built on first use."""
        key: AgentKey = (model or None, self._check_tools(tools),
                         self._check_output_type(output_type))
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

    def _check_output_type(self, name: str | None) -> str | None:
        if name is None or name in self.output_types:
            return name
        known = ", ".join(sorted(self.output_types))
        raise ConfigError(f"output_type: unknown {name!r}; " + (
            f"this server knows {known}" if known else
            "this server has none (start it with --output-type NAME=module:Class)"))

    def _build(self, key: AgentKey) -> Agent:
        from loopwright.agent import Agent

        model, tools, output_type = key
        options = dict(self.options)
        options.pop("clarify", None)  # nobody answers questions over the wire yet
        if model is not None:
            options["model"] = model
        if tools is not None:
            options["tools"] = [t for t in self.options.get("tools", []) if t.name in tools]
        options["approval"] = self.approvals
        options["store"] = self.store  # one store for every agent and the sessions API
        if output_type is not None:
            options["output_type"] = self.output_types[output_type]
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


def checked_output_types(types: Mapping[str, Any]) -> dict[str, Any]:
    """`types` once each name is a plain word and each type one `output_type=` takes; raises
    `ConfigError` naming the first that is not (at start-up, not at a client's first run)."""
    from loopwright.output.spec import OutputSpec

    for name, output_type in types.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(f"output type name {name!r}: use letters, digits, '_', '-' or '.'")
        OutputSpec.of(output_type)  # raises ConfigError saying why it cannot be used
    return dict(types)


def output_types_from_flags(values: Sequence[str]) -> dict[str, Any]:
    """`--output-type NAME=module:Class` values as the name → type map; raises `ConfigError`
    with a one-line reason (not NAME=module:Class, a duplicate name, an import failure)."""
    from loopwright.importing import import_attribute

    found: dict[str, Any] = {}
    for value in values:
        name, sep, target = value.partition("=")
        name, target = name.strip(), target.strip()
        if not sep or not name or not target:
            raise ConfigError(f"--output-type {value!r}: expected NAME=module:Class")
        if name in found:
            raise ConfigError(f"--output-type {name!r} is given twice")
        try:
            found[name] = import_attribute(target)
        except ValueError as exc:
            raise ConfigError(f"--output-type {name}: {exc}") from None
    return checked_output_types(found)


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
