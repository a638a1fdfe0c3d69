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


# Keywords OpenAI strict mode rejects (validation still happens locally against the full schema).
_STRICT_UNSUPPORTED = frozenset({
    "default", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "patternProperties", "propertyNames", "contains",
    "unevaluatedProperties", "unevaluatedItems", "examples",
})


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy that OpenAI strict mode accepts: every object closed, every property required
    (optional ones made nullable), no defaults or unsupported constraints.

    Raises `ValueError` when the schema cannot be expressed strictly (a free-form object such as
    `dict[str, int]`): closing it would forbid every key. `Tool.spec(strict=True)` then falls
    back to the normal schema."""
    out = copy.deepcopy(schema)
    _make_strict(out)
    return out


def is_strict_compatible(schema: dict[str, Any]) -> bool:
    """True when `strict_schema` can express this schema without losing what it accepts."""
    try:
        strict_schema(schema)
    except ValueError:
        return False
    return True


def _make_strict(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _make_strict(item)
        return
    if not isinstance(node, dict):
        return
    for key in _STRICT_UNSUPPORTED & node.keys():
        node.pop(key)
    if _is_object(node):
        if isinstance(node.get("additionalProperties"), dict) and not node.get("properties"):
            raise ValueError("a free-form object (additionalProperties schema) has no strict form")
        props: dict[str, Any] = node.setdefault("properties", {})
        required = set(node.get("required", []))
        for name, prop in props.items():
            if name not in required and isinstance(prop, dict):
                _allow_null(prop)
        node["required"] = list(props)
        node["additionalProperties"] = False
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            for prop in value.values():  # names here are data, not schema keywords
                _make_strict(prop)
        elif key not in ("enum", "const", "required"):
            _make_strict(value)


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _allow_null(prop: dict[str, Any]) -> None:
    if "anyOf" in prop:
        if not any(option.get("type") == "null" for option in prop["anyOf"]):
            prop["anyOf"].append({"type": "null"})
        return
    if "$ref" in prop:
        ref = prop.pop("$ref")
        prop["anyOf"] = [{"$ref": ref}, {"type": "null"}]
        return
    kind = prop.get("type")
    if isinstance(kind, str) and kind != "null":
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        kind.append("null")
    if isinstance(prop.get("enum"), list) and None not in prop["enum"]:
        prop["enum"].append(None)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace local `$ref`s (`#/$defs/Name`, or draft-07 `#/definitions/Name`) by the
    definitions they point to, so small models and grammar-constrained local servers see one
    self-contained schema. Keywords next to a `$ref` (a per-parameter description, a default) are
    kept and win. Recursive definitions cannot be inlined: they stay as `$ref`s and only they are
    kept in `$defs`."""
    key = "$defs" if schema.get("$defs") else "definitions"
    defs: dict[str, Any] = schema.get(key) or {}
    if not defs or not isinstance(defs, dict):
        return schema
    prefix = f"#/{key}/"
    recursive = {name for name in defs if _reaches(name, defs[name], defs, prefix, set())}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(prefix):
            name = ref.removeprefix(prefix)
            if name in defs and name not in recursive:
                siblings = {k: walk(v) for k, v in node.items() if k != "$ref"}
                return {**walk(defs[name]), **siblings}
        return {k: walk(v) for k, v in node.items() if k != key}

    out: dict[str, Any] = walk(schema)
    if recursive:
        out[key] = {name: walk(defs[name]) for name in defs if name in recursive}
    return out


def _reaches(target: str, node: Any, defs: dict[str, Any], prefix: str, seen: set[str]) -> bool:
    """Does `node` refer to definition `target`, directly or through other definitions?"""
    if isinstance(node, list):
        return any(_reaches(target, item, defs, prefix, seen) for item in node)
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(prefix):
        name = ref.removeprefix(prefix)
        if name == target:
            return True
        if name not in seen and name in defs:
            seen.add(name)
            if _reaches(target, defs[name], defs, prefix, seen):
                return True
    return any(_reaches(target, value, defs, prefix, seen)
               for k, value in node.items() if k != "$ref")


def drop_null_optionals(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Remove `null` values of optional parameters whose schema does not accept null, so their
    defaults apply — at any depth: models send `null` for "not given", and strict mode makes
    them send it for every optional field, a nested model's or a `NotRequired` key's too."""
    return _without_null_optionals(
        arguments, schema, schema.get("$defs") or schema.get("definitions") or {})


def _without_null_optionals(arguments: dict[str, Any], schema: dict[str, Any],
                            defs: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    changed: dict[str, Any] = {}
    for name, value in arguments.items():
        if value is None:
            if name not in required and not _accepts_null(properties.get(name)):
                changed[name] = _DROP
        elif isinstance(value, dict | list):
            inner = _nested_without_nulls(value, properties.get(name), defs)
            if inner is not value:
                changed[name] = inner
    if not changed:
        return arguments
    return {name: changed.get(name, value) for name, value in arguments.items()
            if changed.get(name) is not _DROP}


_DROP = object()


def _nested_without_nulls(value: Any, prop: Any, defs: dict[str, Any]) -> Any:
    """`value` (an object or array) with the null optionals of the objects in it dropped, as
    `prop` describes them; `value` itself when nothing changed."""
    prop = _object_or_array(prop, defs)
    if prop is None:
        return value
    if isinstance(value, dict):
        return _without_null_optionals(value, prop, defs) if prop.get("properties") else value
    items = _object_or_array(prop.get("items"), defs)
    if items is None:
        return value
    inner = [_nested_without_nulls(item, items, defs) if isinstance(item, dict | list) else item
             for item in value]
    return value if all(a is b for a, b in zip(inner, value, strict=True)) else inner


def _object_or_array(prop: Any, defs: dict[str, Any]) -> dict[str, Any] | None:
    """The schema of an object or array that `prop` stands for, through a `$defs` reference or
    the one such option of an `anyOf` (`Model | None`); None when there is no single one."""
    for _ in range(8):  # a chain of references, bounded
        if not isinstance(prop, dict):
            return None
        ref = prop.get("$ref")
        if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
            prop = defs.get(ref.rsplit("/", 1)[1])  # draft-07's `definitions`: MCP servers'
            continue
        options = [option for option in prop.get("anyOf") or prop.get("oneOf") or []
                   if isinstance(option, dict) and option.get("type") != "null"]
        if len(options) == 1:
            prop = options[0]
            continue
        return prop if ("properties" in prop or "items" in prop) else None
    return None


def _accepts_null(prop: Any) -> bool:
    if not isinstance(prop, dict):
        return True  # unknown parameter: leave it for validation to report
    kind = prop.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    options = prop.get("anyOf") or prop.get("oneOf") or []
    if any(isinstance(o, dict) and _accepts_null(o) for o in options):
        return True
    return not kind and not options and "enum" not in prop and "$ref" not in prop


def check_against_schema(arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Raise `ValueError` naming everything that is wrong, checked with a full JSON-schema
    validator: nested objects and arrays, `anyOf` / `oneOf` / `allOf`, enums, bounds, `$ref`s.
    A schema that is itself invalid is not the model's fault: then only the values are checked
    that the schema states plainly (required keys and top-level types)."""
    validator = _validator(schema)
    if validator is None:
        _check_plainly(arguments, schema)
        return
    errors = sorted(validator.iter_errors(arguments),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    problems = [_describe(error) for error in errors[:8]]
    if problems:
        raise ValueError("; ".join(dict.fromkeys(problems)))


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A validator per schema object (tool schemas live as long as their tools), or None when
    the schema itself is invalid."""
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
        validator = cls(schema)
    except jsonschema.SchemaError:
        validator = None
    if len(_VALIDATORS) > 1024:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def _describe(error: Any) -> str:
    """One schema violation in words the model can act on."""
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    at = f"argument {where.lstrip('.')!r}" if where else "the arguments"
    kind = error.validator
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        prefix = f"{where.lstrip('.')}." if where else ""
        return f"missing required argument {prefix + missing!r}"
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties") or {}))
        names = ", ".join(repr(f"{where.lstrip('.')}.{e}" if where else e) for e in extra)
        return f"unknown argument {names}"
    if kind == "type":
        expected = error.validator_value
        kinds = [expected] if isinstance(expected, str) else list(expected)
        return f"{at} should be {' or '.join(kinds)}, got {_json_type_name(error.instance)}"
    if kind in ("anyOf", "oneOf"):
        options = [_option_summary(o) for o in error.validator_value]
        return f"{at} matches none of the allowed forms ({'; '.join(options)})"
    return f"{at}: {error.message}"


def _option_summary(option: Any) -> str:
    if not isinstance(option, dict):
        return str(option)
    if "type" in option:
        kind = option["type"]
        return kind if isinstance(kind, str) else " or ".join(kind)
    if "enum" in option:
        return "one of " + ", ".join(map(repr, option["enum"]))
    if "const" in option:
        return repr(option["const"])
    return "an object" if "properties" in option else "a value"


def _json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    for name, types in _JSON_TYPES.items():
        if name not in ("number", "null") and isinstance(value, types):
            return name
    return "number" if isinstance(value, float) else type(value).__name__


def _check_plainly(arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    properties: dict[str, Any] = schema.get("properties") or {}
    problems: list[str] = []
    for name in schema.get("required") or []:
        if name not in arguments:
            problems.append(f"missing required argument {name!r}")
    for name, value in arguments.items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            continue
        expected = prop.get("type")
        kinds = [expected] if isinstance(expected, str) else list(expected or [])
        if kinds and not any(_is_type(value, kind) for kind in kinds):
            problems.append(f"argument {name!r} should be {' or '.join(kinds)}, "
                            f"got {_json_type_name(value)}")
    if problems:
        raise ValueError("; ".join(problems))


def _is_type(value: Any, kind: str) -> bool:
    types = _JSON_TYPES.get(kind)
    if types is None:
        return True
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, types)


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's noise (titles) that costs tokens and tells the model nothing, and inline
    `$defs` references (recursive models keep theirs)."""

    def walk(node: Any, *, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                key: walk(value, in_properties=key == "properties" and not in_properties)
                for key, value in node.items()
                if not (key == "title" and not in_properties and isinstance(value, str))
            }
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    cleaned: dict[str, Any] = walk(inline_refs(schema))
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned
