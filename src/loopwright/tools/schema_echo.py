"""Arguments that repeat the tool's schema instead of giving values, and what to tell the model.

Small models copy the schema they were shown into their arguments
(`{"type": "object", "properties": {...}, "required": [...]}`, or `{"a": {"type": "integer"}}`)
and, told only that `a` is missing, do it again. They get an error that names the keywords and
shows one filled-in object (`examples.grounded_example`: values they wrote inside the copy, a
file the request names, or the schema's own; the parameters in words when a value would be a
made-up sample) — unless the tool takes no arguments, when whatever was sent is read as `{}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from loopwright.arguments import EMPTY
from loopwright.messages import Message, ToolCall, ToolSpec, with_tool_calls
from loopwright.tools.argument_errors import example_or_parameters

SCHEMA_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "$schema", "$defs", "$ref",
    "title", "description", "items", "enum", "const", "default", "examples", "format",
    "anyOf", "oneOf", "allOf", "minimum", "maximum", "minLength", "maxLength", "pattern",
})
_SHAPE_KEYWORDS = ("type", "properties", "required")


def echoed_keywords(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The schema keywords written where values belong (`a.type` for a property); [] if none."""
    properties: dict[str, Any] = schema.get("properties") or {}
    top = [k for k in arguments if k in SCHEMA_KEYWORDS and k not in properties]
    found = top if any(k in _SHAPE_KEYWORDS for k in top) else []
    for name, value in arguments.items():
        expected = properties.get(name)
        if (isinstance(expected, dict) and _is_schema_fragment(value)
                and expected.get("type") not in ("object", None)):
            found.append(f"{name}.type")
    return found


def without_echoed_keywords(arguments: dict[str, Any], schema: dict[str, Any]
                            ) -> dict[str, Any] | None:
    """The arguments minus schema keywords copied beside real values, or None when that leaves
    no value for a required property (measured: the 0.5B model sent `{"item": "apples",
    "additionalProperties": false, "properties": {…}}` until the loop guard stopped it).
    Only top-level keywords go; the rest is validated as usual."""
    properties: dict[str, Any] = schema.get("properties") or {}
    if schema.get("additionalProperties") is not False:
        return None  # such a tool may take a key named like a keyword: it is not ours to drop
    kept = {k: v for k, v in arguments.items()
            if not (k in SCHEMA_KEYWORDS and k not in properties)}
    required = schema.get("required") or list(properties)
    if len(kept) == len(arguments) or not kept or any(
            name not in kept or _is_schema_fragment(kept[name]) for name in required):
        return None
    return kept


def takes_no_arguments(schema: dict[str, Any]) -> bool:
    """A tool with no parameters: whatever its arguments, the call still asks to run it
    (measured: the 0.5B model sent `{"additionalProperties": false, "properties": {}, "type":
    "object"}` to `list_files` four replies in a row, each time told the example `{}`, and
    another time `["/tmp/…/project"]`)."""
    return (not schema.get("properties") and not schema.get("required")
            and schema.get("additionalProperties") is False)  # else it may take any keys


def schema_echo_message(tool_name: str, arguments: dict[str, Any], schema: dict[str, Any],
                        *, request: str = "") -> str | None:
    """The error for arguments that echo the schema, or None when they do not."""
    keywords = echoed_keywords(arguments, schema)
    if not keywords:
        return None
    written = arguments.get("properties")
    values = ({k: v for k, v in written.items() if not _is_schema_fragment(v)}
              if isinstance(written, dict) else {})
    names = ", ".join(json.dumps(k) for k in keywords)
    return (
        f"Error: the arguments for tool {tool_name!r} repeat its schema ({names}) instead of "
        "giving values, so it was not run. The schema only describes the arguments; send the "
        "values themselves as one JSON object, "
        f"{example_or_parameters(schema, written=values, request=request)}"
    )


def _is_schema_fragment(value: Any) -> bool:
    return isinstance(value, dict) and "type" in value and set(value) <= SCHEMA_KEYWORDS


def without_ignored_arguments(msg: Message, tools: Iterable[ToolSpec]) -> Message:
    """`msg` with the calls of tools that take no arguments given `{}`: what such a tool runs
    with whatever was sent, and what makes copies of one call one call (the 0.5B sent
    `list_files` `{}` and, in the same reply, five copies of its schema as the arguments, then
    called it with the schema again for as long as it had tools)."""
    free = {t.name for t in tools if takes_no_arguments(t.parameters)}
    if not any(c.name in free and c.arguments != EMPTY for c in msg.tool_calls):
        return msg
    return with_tool_calls(msg, [ToolCall(id=c.id, name=c.name, arguments=EMPTY)
                                 if c.name in free else c for c in msg.tool_calls])
