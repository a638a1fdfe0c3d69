"""What an MCP server's tool list may put in front of the model: the list is the server's data,
not the user's, so it is bounded before a tool is built from it.

- at most `MAX_TOOLS` tools per server (a server offering 10,000 would fill every request);
- a description (or title) over `MAX_DESCRIPTION` characters is cut (one 10 MB description
  would too);
- a tool whose input schema is not an object, is over `MAX_SCHEMA_CHARS` of JSON, or would grow
  past `MAX_SCHEMA_NODES` parts once its `$ref`s are inlined (a few definitions that each point
  twice at the one before double at every step) is left out, and the user is told why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_types import Tool as RemoteTool

MAX_TOOLS = 128  # OpenAI's limit on the tools of one request
MAX_DESCRIPTION = 2_000
MAX_SCHEMA_CHARS = 64_000
MAX_SCHEMA_NODES = 20_000


def vet_tools(server: str, tools: Iterable[RemoteTool]) -> tuple[list[RemoteTool], list[str]]:
    """The tools to offer, their descriptions cut to size, and one note per tool left out."""
    kept: list[RemoteTool] = []
    notes: list[str] = []
    for remote in tools:
        problem = schema_problem(remote.input_schema)
        if problem is not None:
            notes.append(f"MCP server {server!r}: its tool {remote.name!r} is left out: its input "
                         f"schema {problem}")
        elif len(kept) == MAX_TOOLS:
            notes.append(f"MCP server {server!r} offers more than {MAX_TOOLS} tools; only the "
                         f"first {MAX_TOOLS} are used (name the ones wanted in "
                         f"mcp_servers.{server}.tools)")
            break
        else:
            kept.append(_with_short_description(remote))
    return kept, notes


def schema_problem(schema: Any) -> str | None:
    """Why an input schema cannot be offered to a model, or None when it can."""
    if not isinstance(schema, dict):
        return "is not a JSON object"
    kind = schema.get("type", "object")
    if kind != "object":
        return f"describes {json.dumps(kind)[:40]}, not an object of arguments"
    try:
        size = len(json.dumps(schema))
        if size > MAX_SCHEMA_CHARS:
            return f"is {size:,} characters of JSON (at most {MAX_SCHEMA_CHARS:,} are taken)"
        if _expanded_nodes(schema) > MAX_SCHEMA_NODES:
            return (f"would grow past {MAX_SCHEMA_NODES:,} parts once its $refs are inlined")
    except (RecursionError, ValueError, TypeError):
        return "nests too deeply"
    return None


def _with_short_description(remote: RemoteTool) -> RemoteTool:
    """The tool with its description and title (the description when there is none) cut."""
    texts = {"description": remote.description, "title": remote.title}
    long = {key: text for key, text in texts.items() if text and len(text) > MAX_DESCRIPTION}
    if not long:
        return remote
    return remote.model_copy(update={
        key: f"{text[:MAX_DESCRIPTION]}… [{len(text) - MAX_DESCRIPTION:,} more characters not "
             f"shown]" for key, text in long.items()})


def _expanded_nodes(schema: dict[str, Any]) -> int:
    """The parts the schema has once `inline_refs` has inlined it (counted up to just past the
    limit, each definition once: the count takes time in the schema's size, not in its
    expansion's)."""
    key = "$defs" if schema.get("$defs") else "definitions"
    defs = schema.get(key)
    if not isinstance(defs, dict):
        defs = {}
    prefix = f"#/{key}/"
    sizes: dict[str, int] = {}

    def count(node: Any, inside: frozenset[str]) -> int:
        if isinstance(node, list):
            return min(1 + sum(count(item, inside) for item in node), MAX_SCHEMA_NODES + 1)
        if not isinstance(node, dict):
            return 1
        total = 1
        ref = node.get("$ref")
        name = ref.removeprefix(prefix) if isinstance(ref, str) and ref.startswith(prefix) else ""
        if name in defs and name not in inside:  # a recursive definition stays a $ref
            if name not in sizes:
                sizes[name] = count(defs[name], inside | {name})
            total += sizes[name]
        total += sum(count(value, inside) for k, value in node.items() if k != key)
        return min(total, MAX_SCHEMA_NODES + 1)

    return count(schema, frozenset())
