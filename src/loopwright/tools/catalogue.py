"""The tool catalogue of one run: which tools are advertised on each turn and which resolve.

Per turn (DESIGN §1 step 3): the category router (turn 1 only) → the hide map → deferred tools.

- **Router**: with `allowed_tool_tags`, the first turn offers only tools with a matching tag plus
  core tools; from turn 2 on the whole catalogue is offered.
- **Hide map**: `hidden_tools` are never advertised and never resolve; a call to one gets the same
  "no such tool" error (naming the closest real tools) as a hallucinated name.
- **Deferred tools** are registered but not advertised. The model gets a small `tool_search`
  tool; the tools it finds are activated for the rest of the run and their full schemas appear
  on the very next turn, *appended* after the ones already offered so that the prompt prefix
  (and a provider's prompt cache) stays intact. Core tools are never deferred.
  A call to a deferred tool that was never activated **activates it and runs** (its arguments are
  validated against its schema like any call): the model evidently knows the tool, and an error
  telling it to search first would only cost a turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from loopwright.messages import ToolSpec
from loopwright.tools.base import Tool
from loopwright.tools.registry import ToolRegistry

TOOL_SEARCH = "tool_search"

# "auto" deferral on local providers: small models get lost in (and their context is eaten by)
# large catalogues, so offer at most this many tools and this much schema text up front.
AUTO_MAX_ADVERTISED = 12
AUTO_SCHEMA_BUDGET = 6000  # characters of JSON: roughly 1,500 tokens
MAX_SEARCH_RESULTS = 10
_NAMES_IN_DESCRIPTION = 40  # list deferred names in tool_search's description up to this many


class RunCatalogue:
    """The catalogue policy of an agent plus the per-run activation state (one per run)."""

    def __init__(self, registry: ToolRegistry, *, allowed_tags: Iterable[str] | None = None,
                 deferred: Any = None, local: bool = False, strict: bool = False,
                 compact: bool = False) -> None:
        self.registry = registry
        self.compact = compact  # a small local window: specs without prose (context/prompt.py)
        self._compact_specs: dict[int, ToolSpec] = {}  # by the full spec's identity
        self.allowed_tags = frozenset(allowed_tags) if allowed_tags else None
        self.deferred_setting = deferred
        self.local = local
        self.strict = strict
        self.activated: list[str] = []  # in activation order: advertised in this order
        self._deferred: frozenset[str] | None = None
        self._deferred_for = -1
        self._search_tool: Tool | None = None

    # -- what is deferred --

    @property
    def deferred(self) -> frozenset[str]:
        """Names of deferred tools (computed once per registry size: MCP tools may be added)."""
        if self._deferred is None or self._deferred_for != len(self.registry):
            self._deferred = frozenset(choose_deferred(self.registry.visible(),
                                                       self.deferred_setting, local=self.local))
            self._deferred_for = len(self.registry)
        return self._deferred

    def is_pending(self, name: str) -> bool:
        """Deferred and not yet activated in this run."""
        return name in self.deferred and name not in self.activated

    # -- per turn --

    def advertised(self, turn: int) -> list[Tool]:
        """The tools offered on `turn` (1-based), in a stable order: regular tools in
        registration order, then `tool_search`, then activated tools in activation order."""
        deferred = self.deferred
        regular = [t for t in self.registry.visible() if t.name not in deferred]
        if turn <= 1 and self.allowed_tags is not None:
            regular = [t for t in regular if t.core or t.tags & self.allowed_tags]
        tools = list(regular)
        if deferred and self.search_tool.name not in self.registry:
            tools.append(self.search_tool)
        for name in self.activated:
            found = self.registry.get(name)
            if found is not None:
                tools.append(found)
        return tools

    def callable_names(self) -> list[str]:
        """Every name a call may use in this run (hidden tools excluded, deferred included)."""
        names = [t.name for t in self.registry.visible()]
        if self.deferred and TOOL_SEARCH not in self.registry:
            names.append(TOOL_SEARCH)
        return names

    def specs(self, turn: int) -> list[ToolSpec]:
        """`advertised(turn)` as specs (strict OpenAI schemas when `strict_tools` is on)."""
        specs = [t.spec(strict=self.strict) for t in self.advertised(turn)]
        if not self.compact:
            return specs
        from loopwright.context.prompt import compact_spec

        out = []
        for spec in specs:  # built once per spec, so each turn sends the same objects
            found = self._compact_specs.get(id(spec))
            if found is None:
                found = self._compact_specs[id(spec)] = compact_spec(spec)
            out.append(found)
        return out

    def resolve(self, name: str) -> Tool | None:
        """The tool a call names, or None (unknown or hidden). Used as the executor's resolver."""
        if name == TOOL_SEARCH and self.deferred and TOOL_SEARCH not in self.registry:
            return self.search_tool
        found = self.registry.get(name)
        if found is not None and self.is_pending(name):
            self.activate([name])
        return found

    # -- tool_search --

    def activate(self, names: Iterable[str]) -> list[str]:
        """Activate deferred tools by name; returns the newly activated ones."""
        new = [n for n in names if self.is_pending(n)]
        self.activated.extend(new)
        return new

    def search(self, query: str, limit: int = 5) -> list[Tool]:
        """Deferred tools matching `query` (names, words of descriptions, tags), best first.
        `select:a,b` picks tools by exact name."""
        candidates = [t for t in self.registry.visible() if t.name in self.deferred]
        if query.strip().startswith("select:"):
            wanted = {n.strip() for n in query.split(":", 1)[1].split(",")}
            return [t for t in candidates if t.name in wanted]
        terms = _words(query)
        scored = [(score, n, t) for n, t in enumerate(candidates)
                  if (score := _score(t, terms, query)) > 0]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [t for _, _, t in scored[:max(1, min(limit, MAX_SEARCH_RESULTS))]]

    @property
    def search_tool(self) -> Tool:
        if self._search_tool is None:
            self._search_tool = self._build_search_tool()
        return self._search_tool

    def _build_search_tool(self) -> Tool:
        names = sorted(self.deferred)
        listed = ", ".join(names[:_NAMES_IN_DESCRIPTION])
        extra = len(names) - _NAMES_IN_DESCRIPTION
        more = f" and {extra} more" if extra > 0 else ""
        description = (
            f"Find and load more tools. {len(names)} tools are available but not loaded yet: "
            f"{listed}{more}. Search by keywords (or `select:name1,name2`); the matching tools "
            "are loaded and you can call them from your next reply."
        )
        parameters = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "keywords or select:name1,name2"},
                "limit": {"type": "integer", "description": "most tools to load", "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        return Tool(name=TOOL_SEARCH, description=description, parameters=parameters,
                    function=self._run_search, read_only=True, core=True, raw_arguments=True)

    async def _run_search(self, arguments: dict[str, Any], ctx: Any) -> str:
        query = str(arguments.get("query") or "")
        limit = arguments.get("limit", 5)
        found = self.search(query, int(limit) if isinstance(limit, int | float) else 5)
        if not found:
            names = ", ".join(sorted(self.deferred)[:_NAMES_IN_DESCRIPTION])
            return f"No tool matches {query!r}. Tools you can load: {names}."
        new = set(self.activate(t.name for t in found))
        lines = [f"- {t.name}: {_first_line(t.description)}"
                 + ("" if t.name in new else " (already loaded)") for t in found]
        return ("Loaded these tools; their full schemas are available from your next reply, "
                "call them then:\n" + "\n".join(lines))


def choose_deferred(tools: Sequence[Tool], setting: Any, *, local: bool) -> set[str]:
    """Which tools to defer. `Tool.deferred` always counts; `setting` adds: "all" (every non-core
    tool), a list of names, or "auto" (the heavy set, on local providers only: the largest
    non-core schemas until at most `AUTO_MAX_ADVERTISED` tools and `AUTO_SCHEMA_BUDGET`
    characters of schema remain). Core tools are never deferred."""
    chosen = {t.name for t in tools if t.deferred}
    if setting == "all":
        chosen |= {t.name for t in tools}
    elif isinstance(setting, list | tuple | set | frozenset):
        chosen |= {str(n) for n in setting}
    elif isinstance(setting, str) and setting not in ("auto", "none", ""):
        chosen |= {n.strip() for n in setting.split(",")}  # "a,b" from an environment variable
    elif setting == "auto" and local:
        chosen |= _heavy(tools, chosen)
    return {t.name for t in tools if t.name in chosen and not t.core}


def _heavy(tools: Sequence[Tool], already: set[str]) -> set[str]:
    kept = [t for t in tools if t.name not in already]
    sizes = {t.name: len(json.dumps(t.parameters)) + len(t.description) for t in kept}
    heavy: set[str] = set()
    total = sum(sizes.values())
    for candidate in sorted((t for t in kept if not t.core), key=lambda t: -sizes[t.name]):
        if len(kept) - len(heavy) <= AUTO_MAX_ADVERTISED and total <= AUTO_SCHEMA_BUDGET:
            break
        heavy.add(candidate.name)
        total -= sizes[candidate.name]
    return heavy


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) > 1}


def _score(tool: Tool, terms: set[str], query: str) -> int:
    if query.strip() == tool.name:
        return 100
    name_words = _words(tool.name)
    tag_words = {w for tag in tool.tags for w in _words(tag)}
    description_words = _words(tool.description)
    score = 0
    for term in terms:
        if term in name_words:
            score += 3
        elif any(term in w or w in term for w in name_words if len(w) > 2):
            score += 2
        if term in tag_words:
            score += 2
        if term in description_words:
            score += 1
    return score


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0][:160]
