"""Shared by every family: decoding JSON-ish values and reading call objects out of them."""

from __future__ import annotations

import json
import re
from typing import Any

from loopwright.arguments import balanced_end, python_literal
from loopwright.wire.text_calls.model import TextToolCall

NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name")
ARGUMENT_KEYS = ("arguments", "parameters", "params", "args", "input", "tool_input", "kwargs")
META_KEYS = frozenset({"type", "id", "call_id", "index"})
# keys a call object may start with; any other first key means the object is data
CALL_KEYS = frozenset({*NAME_KEYS, *ARGUMENT_KEYS, *META_KEYS, "tool_call", "tool_calls",
                       "calls", "function_calls", "tools"})
LOOSE_NAME = re.compile(
    r"""["']?(?:name|tool|tool_name|function)["']?\s*[:=]\s*["']([A-Za-z_][\w.\-]*)["']""")
_LOOSE_ARGS = re.compile(
    r"""["']?(?:arguments|parameters|params|args|input)["']?\s*[:=]\s*""")
_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_DECODER = json.JSONDecoder(strict=False)


def decode_at(text: str, start: int) -> tuple[Any, int]:
    """(value, end) of the JSON (or Python-literal, or repairable) value at `start`; (None, start)
    if there is none. Only closed values are decoded here; cut-off ones are the caller's call."""
    try:
        return _DECODER.raw_decode(text, start)
    except ValueError:
        pass
    end = balanced_end(text, start)
    if end is None:
        return None, start
    span = text[start:end]
    value = python_literal(span)
    if isinstance(value, dict | list):
        return value, end
    value = _repair_json(span)
    return (value, end) if isinstance(value, dict | list) else (None, start)


def _repair_json(span: str) -> Any:
    import json_repair

    try:
        return json_repair.loads(span)
    except Exception:  # json_repair raises assorted errors on hopeless input
        return None


def objects_in(body: str, *, allow_loose: bool, style: str = "hermes"
               ) -> tuple[list[Any], str | None]:
    """Every JSON value in a block, back to back (separated by space, `,` or `;`), lists flattened.
    A cut-off object at the end yields a loose object (name plus raw argument text)."""
    out: list[Any] = []
    pos = 0
    while True:
        while pos < len(body) and (body[pos].isspace() or body[pos] in ",;"):
            pos += 1
        if pos >= len(body) or body[pos] not in "{[":
            break
        value, end = decode_at(body, pos)
        if value is None:
            loose = loose_call(body[pos:], style=style) if allow_loose else None
            if loose is None:
                return out, f"the call is not valid JSON: {preview(body[pos:])}"
            out.append({"name": loose.name, "arguments": loose.arguments})
            break
        out.extend(value if isinstance(value, list) else [value])
        pos = end
    if not out and body and body[0] not in "{[":
        return out, f"expected a JSON object, got: {preview(body)}"
    return out, None


def unwrap(obj: Any) -> Any:
    """`{"tool_call": {…}}` (llama.cpp's generic format) and `{"tool_calls": [...]}` wrappers."""
    if isinstance(obj, dict) and len(obj) == 1:
        inner = next(iter(obj.values()))
        key = next(iter(obj))
        if key == "tool_call" and isinstance(inner, dict):
            return inner
        if key in ("tool_calls", "calls", "function_calls", "tools") and isinstance(inner, list):
            return inner
    return obj


def call_from_object(obj: Any, *, style: str, allow_flat: bool) -> TextToolCall | None:
    """A call from `{"name": …, "arguments": …}` and its variants; None if it is not one."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape {"type": "function", "function": {…}}
        obj = obj["function"]
    name_key = next((k for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k]), None)
    if name_key is None:
        return None
    arg_key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    if arg_key is not None:
        value = obj[arg_key]
    else:
        value = {k: v for k, v in obj.items() if k != name_key and k not in META_KEYS}
        if value and not allow_flat:
            return None  # {"name": "Alice", "age": 3} is data, not a call
    if isinstance(value, str):
        arguments = value if value.strip() else "{}"
    else:
        arguments = json.dumps({} if value is None else value, ensure_ascii=False)
    return TextToolCall(name=obj[name_key].strip(), arguments=arguments, style=style)


def is_call_shaped(obj: Any) -> bool:
    """Exactly the shape of a call — a name, arguments that are an object (or JSON text), and
    nothing else but ids: unmistakable enough to be a call even to a tool that does not exist."""
    obj = unwrap(obj)
    if isinstance(obj, list):
        return bool(obj) and all(is_call_shaped(o) for o in obj)
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("function"), dict) and set(obj) <= {"function", *META_KEYS}:
        obj = obj["function"]
    names = [k for k in NAME_KEYS if isinstance(obj.get(k), str)]
    args = [k for k in ARGUMENT_KEYS if k in obj]
    if len(names) != 1 or len(args) != 1 or not set(obj) <= {*names, *args, *META_KEYS}:
        return False
    value = obj[args[0]]
    return isinstance(value, dict) or (isinstance(value, str) and value.strip()[:1] in ("{", ""))


def loose_call(text: str, *, style: str) -> TextToolCall | None:
    """Name and raw argument text from an object too broken (or cut off) to decode. Arguments
    cut before they began keep the whole cut object, so the executor reports it as cut off
    instead of running the tool with no arguments."""
    name = LOOSE_NAME.search(text)
    if name is None:
        return None
    args = _LOOSE_ARGS.search(text)
    if args is None:
        return TextToolCall(name=name.group(1), arguments="{}", style=style)
    start = args.end()
    if text.startswith('"', start):
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, str):
            return TextToolCall(name=name.group(1), arguments=value, style=style)
    end = balanced_end(text, start) if text.startswith(("{", "["), start) else None
    raw = text[start:end] if end else trim_outer_close(text[start:])
    if not raw.strip():
        raw = text.strip()  # `{"name": "x", "arguments":` — reported as cut off
    return TextToolCall(name=name.group(1), arguments=raw.strip(), style=style)


def trim_outer_close(raw: str) -> str:
    """`{"a": 1}}` → `{"a": 1}`: drop closers that belong to the enclosing call object."""
    raw = raw.rstrip()
    while raw.endswith("}") and raw.count("}") > raw.count("{"):
        raw = raw[:-1].rstrip()
    return raw


def strip_fence(body: str) -> str:
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else body[3:]
        body = body.rstrip()
        if body.endswith("```"):
            body = body[:-3]
    return body.strip()


def preview(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "…")


def tidy(text: str) -> str:
    return _BLANK_RUNS.sub("\n\n", text).strip()
