"""JSON-schema helpers: OpenAI strict-mode schemas and a light check for tools without a model."""

from __future__ import annotations

import copy
from typing import Any

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy that OpenAI strict mode accepts: every object closed, every property required
    (optional ones made nullable), no defaults."""
    out = copy.deepcopy(schema)
    _make_strict(out)
    return out


def _make_strict(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _make_strict(item)
        return
    if not isinstance(node, dict):
        return
    node.pop("default", None)
    if node.get("type") == "object" or "properties" in node:
        props: dict[str, Any] = node.setdefault("properties", {})
        required = set(node.get("required", []))
        for name, prop in props.items():
            if name not in required and isinstance(prop, dict):
                _allow_null(prop)
        node["required"] = list(props)
        node["additionalProperties"] = False
    for value in node.values():
        _make_strict(value)


def _allow_null(prop: dict[str, Any]) -> None:
    if "anyOf" in prop:
        if not any(option.get("type") == "null" for option in prop["anyOf"]):
            prop["anyOf"].append({"type": "null"})
        return
    kind = prop.get("type")
    if isinstance(kind, str) and kind != "null":
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        kind.append("null")


def check_against_schema(arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Raise `ValueError` naming what is wrong: missing required keys, unknown keys when the schema
    is closed, or a top-level value of the wrong JSON type."""
    properties: dict[str, Any] = schema.get("properties") or {}
    problems: list[str] = []
    for name in schema.get("required") or []:
        if name not in arguments:
            problems.append(f"missing required argument {name!r}")
    if schema.get("additionalProperties") is False:
        for name in arguments:
            if name not in properties:
                problems.append(f"unknown argument {name!r}")
    for name, value in arguments.items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            continue
        expected = prop.get("type")
        kinds = [expected] if isinstance(expected, str) else list(expected or [])
        if kinds and not any(_is_type(value, kind) for kind in kinds):
            problems.append(f"argument {name!r} should be {' or '.join(kinds)}, "
                            f"got {type(value).__name__}")
    if problems:
        raise ValueError("; ".join(problems))


def _is_type(value: Any, kind: str) -> bool:
    types = _JSON_TYPES.get(kind)
    if types is None:
        return True
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, types)
