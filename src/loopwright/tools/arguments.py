"""Tool arguments: parse, repair broken JSON, validate against the schema, or explain what is wrong.

Unrecoverable arguments never run a tool with `{}`: the model gets a precise error and an example.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pydantic

_FENCE = re.compile(r"^\s*```(?:json|JSON|javascript|js|python)?\s*\n?(.*?)\n?\s*```\s*$", re.S)


class ArgumentsError(ValueError):
    """The arguments could not be turned into a valid object for the tool."""


@dataclass(kw_only=True, slots=True)
class ParsedArguments:
    value: dict[str, Any]
    repaired: bool = False


def parse_arguments(raw: str | dict[str, Any] | None) -> ParsedArguments:
    """Turn a model's raw arguments into a dict, repairing what can be repaired.

    Accepts: valid JSON, `""`/whitespace (no arguments), double-encoded JSON strings, code fences,
    Python-literal dicts, trailing commas, single quotes and prose around the object.
    Raises `ArgumentsError` when nothing object-like can be recovered.
    """
    if raw is None:
        return ParsedArguments(value={})
    if isinstance(raw, dict):
        return ParsedArguments(value=raw)
    text = raw.strip()
    if not text:
        return ParsedArguments(value={})
    try:
        value = json.loads(text)
    except ValueError:
        return _repair(text)
    if isinstance(value, str):  # double-encoded: "{\"a\": 1}"
        inner = parse_arguments(value)
        return ParsedArguments(value=inner.value, repaired=True)
    if isinstance(value, dict):
        return ParsedArguments(value=value)
    if value is None:  # `null`: some servers send it for a call without arguments
        return ParsedArguments(value={}, repaired=True)
    raise ArgumentsError(f"expected a JSON object, got {_json_kind(value)}: {text[:120]}")


def is_complete_json(raw: str) -> bool:
    """True when the text is a whole JSON value as it stands (not cut off)."""
    if not raw.strip():
        return True
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


def _repair(text: str) -> ParsedArguments:
    """Recover an object from broken arguments, from the most exact strategy to the loosest."""
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    value = _loads_lenient(text)  # raw control characters (unescaped newlines) inside strings
    if isinstance(value, str):
        return ParsedArguments(value=parse_arguments(value).value, repaired=True)
    if isinstance(value, dict):
        return ParsedArguments(value=value, repaired=True)
    start = text.find("{")
    if start < 0:
        raise ArgumentsError(f"no JSON object found in the arguments: {text[:120]!r}")
    try:  # prose before or after one well-formed object
        value, _ = _DECODER.raw_decode(text, start)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return ParsedArguments(value=value, repaired=True)
    end = balanced_end(text, start)
    if end is None:
        cut = _cut_off_problem(text[start:])
        if cut:
            raise ArgumentsError(cut)
    span = text[start:end]
    literal = python_literal(span)  # {'a': True, 'b': None}: exact where json_repair guesses
    if isinstance(literal, dict):
        return ParsedArguments(value=literal, repaired=True)
    return _json_repair(text[start:], span)


def _json_repair(text: str, span: str) -> ParsedArguments:
    import json_repair

    try:
        value = json_repair.loads(span)
    except Exception as exc:  # json_repair raises assorted errors on hopeless input
        raise ArgumentsError(f"the arguments are not valid JSON and could not be repaired: "
                             f"{text[:120]!r}") from exc
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict)), None)
    if isinstance(value, str):
        return parse_arguments(value)
    if not isinstance(value, dict) or (not value and not _looks_empty_object(span)):
        raise ArgumentsError(f"the arguments are not valid JSON and could not be repaired: "
                             f"{text[:120]!r}")
    return ParsedArguments(value=value, repaired=True)


_DECODER = json.JSONDecoder(strict=False)
_DANGLING_KEY = re.compile(r"""["']?([\w$-]+)["']?\s*:\s*$""")


def _loads_lenient(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except ValueError:
        return None


def balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket closing the one at `start`, skipping quoted strings (JSON or
    Python quotes); None when the text ends first (a cut-off object)."""
    depth = 0
    quote = ""
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth <= 0:
                return i + 1
        i += 1
    return None


def _cut_off_problem(text: str) -> str | None:
    """A precise error when an unclosed object ends right after a key: repairing it would invent
    an empty value the model never wrote."""
    dangling = _DANGLING_KEY.search(text.rstrip())
    if dangling and not _ends_inside_string(text):
        return (f"the arguments are cut off: key {dangling.group(1)!r} has no value and the "
                "object is never closed")
    return None


def _ends_inside_string(text: str) -> bool:
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote and ch == "\\":
            i += 2
            continue
        if quote and ch == quote:
            quote = ""
        elif not quote and ch in "\"'":
            quote = ch
        i += 1
    return bool(quote)


def python_literal(text: str) -> Any:
    """The value of a Python literal (`{'a': True, 'b': None}`) as JSON-compatible data, or None.
    Uses `ast.literal_eval`: nothing is ever executed."""
    import ast

    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return to_jsonable(value)


def to_jsonable(value: Any) -> Any:
    """Python data (tuples, sets, bytes) as JSON-compatible data."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, complex):
        return str(value)
    return value


def _looks_empty_object(text: str) -> bool:
    """`{}` or `{ ` with nothing inside: an honest empty object, not garbage repaired to one."""
    return not text[1:].split("}", 1)[0].strip()


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number",
            bool: "a boolean", type(None): "null"}.get(type(value), type(value).__name__)


def describe_validation_error(exc: pydantic.ValidationError | ValueError) -> str:
    """A short, precise list of what is wrong with the arguments."""
    if not isinstance(exc, pydantic.ValidationError):
        return str(exc)
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        if err["type"] == "missing":
            problems.append(f"missing required argument {where!r}")
        elif err["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r}")
        else:
            problems.append(f"{where!r}: {err['msg']} (got {err.get('input')!r:.60})")
    return "; ".join(problems)


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A minimal example object for a schema: required properties with placeholder values."""
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    return {name: _example_value(properties.get(name) or {}, schema) for name in required}


def _example_value(prop: dict[str, Any], root: dict[str, Any]) -> Any:
    if "$ref" in prop:
        ref = prop["$ref"].rsplit("/", 1)[-1]
        target = (root.get("$defs") or {}).get(ref, {})
        return example_arguments(target) if target.get("properties") else _example_value(target,
                                                                                          root)
    if prop.get("enum"):
        return prop["enum"][0]
    if "const" in prop:
        return prop["const"]
    if "default" in prop:
        return prop["default"]
    for key in ("anyOf", "oneOf"):
        options = [o for o in prop.get(key, []) if o.get("type") != "null"]
        if options:
            return _example_value(options[0], root)
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {
        "string": "...",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "array": [],
        "object": example_arguments(prop) if prop.get("properties") else {},
    }.get(kind or "string", "...")


def arguments_error_message(tool_name: str, problem: str, schema: dict[str, Any]) -> str:
    """What the model reads when its arguments cannot be used."""
    example = json.dumps(example_arguments(schema), ensure_ascii=False)
    return (
        f"Error: the arguments for tool {tool_name!r} could not be used: {problem}. "
        f"The tool was not run. Call it again with arguments that are one JSON object matching "
        f"its schema, for example: {example}"
    )


def truncated_call_message(tool_name: str) -> str:
    return (
        f"Error: your call to {tool_name!r} was cut off by the output-token limit before its "
        "arguments were complete, so it was not run. Retry with smaller arguments: split large "
        "content into several smaller calls."
    )
