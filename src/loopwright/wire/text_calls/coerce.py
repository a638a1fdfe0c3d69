"""Text argument values (XML-style calls) converted to the types of the tool's JSON schema, the
way the model meant them: `"5"` for an integer parameter is 5. A value that does not convert is
left as written, so validation reports it precisely."""

from __future__ import annotations

import ast
import json
from typing import Any

_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})


def coerce_arguments(arguments: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    properties = (schema or {}).get("properties")
    if not isinstance(properties, dict):
        return arguments
    return {key: coerce_value(value, properties.get(key)) for key, value in arguments.items()}


def coerce_value(value: Any, schema: Any) -> Any:
    if not isinstance(value, str) or not isinstance(schema, dict):
        return value
    options = _types(schema)
    if not options or "string" in options:
        return value
    text = value.strip()
    for kind in options:
        converted = _convert(text, kind)
        if converted is not _FAILED:
            return converted
    return value


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    out: list[str] = []
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or ():
            if isinstance(option, dict):
                out.extend(_types(option))
    if not out and "enum" in schema:
        out = sorted({_json_type(v) for v in schema["enum"]})
    return out


_FAILED = object()


def _convert(text: str, kind: str) -> Any:
    lowered = text.lower()
    if kind == "null":
        return None if lowered in ("null", "none", "") else _FAILED
    if kind == "boolean":
        return True if lowered in _TRUE else False if lowered in _FALSE else _FAILED
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return _FAILED
            return int(number) if number.is_integer() else _FAILED
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return _FAILED
        return int(number) if number.is_integer() and "." not in text else number
    if kind in ("object", "array"):
        for load in (json.loads, ast.literal_eval):
            try:
                parsed = load(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, dict if kind == "object" else list | tuple):
                return list(parsed) if isinstance(parsed, tuple) else parsed
        return _FAILED
    return _FAILED


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return "string"
