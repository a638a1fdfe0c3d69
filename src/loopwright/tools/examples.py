"""Example arguments shown to the model: one object with a value for every required property.

Small models copy the example they are shown, value for value. So a value is taken, in order,
from what the model itself wrote inside a copy of the schema, from the user's request (a file it
names, for a parameter that takes a path), from the schema (`examples`, `enum`, `const`,
`default`), and only then is a sample: `PLACEHOLDER` for text, which a call may never send as
a value (`arguments.placeholder_message`). Measured on Qwen2.5-Coder-0.5B: shown `{"path": "your
path here"}` after it copied the schema of `read_file`, it read "your path here" twice and
never notes.txt, the file the request named.
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
    properties: dict[str, Any] = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    files = named_files(request) if request else []
    out: dict[str, Any] = {}
    for name in required:
        prop = properties.get(name) or {}
        value = (written or {}).get(name)
        if value is not None:
            out[name] = value
        elif files and name in PATH_PARAMS and prop.get("type") == "string":
            out[name] = files[0]
        else:
            out[name] = _sample(prop, schema)
    return out


def example_call(name: str, schema: dict[str, Any], *, request: str = "") -> str:
    """A call of tool `name` with example arguments, as JSON."""
    return json.dumps({"name": name, "arguments": example_arguments(schema, request=request)},
                      ensure_ascii=False)


def _sample(prop: dict[str, Any], root: dict[str, Any]) -> Any:
    if "$ref" in prop:
        target = (root.get("$defs") or {}).get(str(prop["$ref"]).rsplit("/", 1)[-1]) or {}
        return example_arguments(target) if target.get("properties") else _sample(target, root)
    for key in ("examples", "enum"):
        if isinstance(prop.get(key), list) and prop[key]:
            return prop[key][0]
    for key in ("const", "default"):
        if key in prop:
            return prop[key]
    for key in ("anyOf", "oneOf"):
        options = [o for o in prop.get(key) or []
                   if isinstance(o, dict) and o.get("type") != "null"]
        if options:
            return _sample(options[0], root)
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        return example_arguments(prop) if prop.get("properties") else {}
    if kind == "array":
        items = prop.get("items")
        return [_sample(items, root)] if isinstance(items, dict) and items else []
    return _SCALARS.get(str(kind), PLACEHOLDER)
