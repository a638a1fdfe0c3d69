"""Example arguments shown to the model: one object with a value for every required property.

Small models copy the example they are shown, value for value. So a value is taken, in order,
from what the model itself wrote inside a copy of the schema, from the user's request (a file it
names, for a parameter that takes a path), from the schema (`examples`, `enum`, `const`,
`default`), and only then is a sample: `PLACEHOLDER` for text, 1 for a number. An error shows
no value that the model or the request did not give and the schema does not force (a `const`,
an `enum` of one): a copied sample is a call that runs (the 0.5B and the 1.5B, shown
`{"path": "..."}`, sent it), and so is a schema's own example (`"curl … | sh"`, from any MCP
server) or an enum's first choice (`"production"`); where one would be needed the error names
the parameters and their types instead (`describe_parameters`). The prompt-mode format example
may show samples; a call may never send `PLACEHOLDER` as a value
(`argument_errors.placeholder_message`).
Measured on Qwen2.5-Coder-0.5B: shown `{"path": "your path here"}` after it copied the schema of
`read_file`, it read "your path here" twice and never notes.txt, the file the request named.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLACEHOLDER = "..."
PATH_PARAMS = ("path", "file_path", "filepath", "file", "filename", "file_name", "target_file",
               "absolute_path")
# a file name with an extension, optionally under folders; not part of a URL or an address
_FILE = re.compile(r"(?<![\w./:@\\~-])((?:~?/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})"
                   r"(?![\w/\\-])")
_MAX_NAMED = 5  # file names looked up per request
_MIN_NAME = 4  # "e.g", "i.e" are not files
_SCALARS = {"integer": 1, "number": 1.5, "boolean": True}


def named_files(text: str) -> list[str]:
    """The file names a request mentions (`config.ini`, `src/app.py`), first mention first."""
    found: list[str] = []
    for match in _FILE.finditer(text):
        name = match.group(1).rstrip(".")
        if len(name) >= _MIN_NAME and name not in found:
            found.append(name)
    return found[:_MAX_NAMED]


def example_arguments(schema: dict[str, Any], *, written: dict[str, Any] | None = None,
                      request: str = "") -> dict[str, Any]:
    """An example object for `schema`: its required properties (all, when none are marked),
    each with its value in `written` (values the model put inside its copy of the schema), else
    one from `request` or the schema, else a sample."""
    return _example(schema, written=written, request=request)[0]


def grounded_example(schema: dict[str, Any], *, written: dict[str, Any] | None = None,
                     request: str = "") -> dict[str, Any] | None:
    """`example_arguments` when no value of it is a made-up sample, else None: what an error
    may show."""
    example, grounded = _example(schema, written=written, request=request)
    return example if grounded else None


def describe_parameters(schema: dict[str, Any]) -> str:
    """The required parameters and their types, in words: `path (string), count (integer)`."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    return ", ".join(f"{name} ({(properties.get(name) or {}).get('type') or 'any'})"
                     for name in required) or "no arguments"


def _example(schema: dict[str, Any], *, written: dict[str, Any] | None,
             request: str) -> tuple[dict[str, Any], bool]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    files = named_files(request) if request else []
    out: dict[str, Any] = {}
    grounded = True
    for name in required:
        prop = properties.get(name) or {}
        value = (written or {}).get(name)
        if value is not None:
            out[name] = value
        elif files and name in PATH_PARAMS and prop.get("type") == "string":
            out[name] = files[0]
        else:
            out[name], known = _sample(prop, schema)
            grounded = grounded and known
    return out, grounded


def example_call(name: str, schema: dict[str, Any], *, request: str = "",
                 grounded: bool = False) -> str | None:
    """A call of tool `name` with example arguments, as JSON; with `grounded`, None when a
    value would be a made-up sample."""
    example, known = _example(schema, written=None, request=request)
    if grounded and not known:
        return None
    return json.dumps({"name": name, "arguments": example}, ensure_ascii=False)


def _sample(prop: dict[str, Any], root: dict[str, Any]) -> tuple[Any, bool]:
    """A value for `prop`, and whether it is the only value the schema allows (rather than one
    picked or made up). A schema's `examples` and `default` are the tool author's, and an
    MCP server's schema is anyone's (`{"examples": ["curl … | sh"]}`); the first of an `enum`
    is a choice (`"production"`): none of them is the model's to copy into a call that runs."""
    if "$ref" in prop:
        target = (root.get("$defs") or {}).get(str(prop["$ref"]).rsplit("/", 1)[-1]) or {}
        if target.get("properties"):
            return _example(target, written=None, request="")
        return _sample(target, root)
    if "const" in prop:
        return prop["const"], True
    examples, enum = prop.get("examples"), prop.get("enum")
    if isinstance(examples, list) and examples:
        return examples[0], False
    if isinstance(enum, list) and enum:
        return enum[0], len(enum) == 1
    if "default" in prop:
        return prop["default"], False
    for key in ("anyOf", "oneOf"):
        options = [o for o in prop.get(key) or []
                   if isinstance(o, dict) and o.get("type") != "null"]
        if options:
            return _sample(options[0], root)
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        return _example(prop, written=None, request="") if prop.get("properties") else ({}, True)
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, dict) and items:
            value, known = _sample(items, root)
            return [value], known
        return [], True
    return _SCALARS.get(str(kind), PLACEHOLDER), False
