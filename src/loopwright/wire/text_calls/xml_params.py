"""Argument lists written as XML-ish tags: Qwen3-Coder `<parameter=k>v</parameter>` and GLM-4
`<arg_key>k</arg_key><arg_value>v</arg_value>`. Values are text as written (objects and lists
decoded); `coerce.coerce_arguments` later gives them the types of the tool's schema."""

from __future__ import annotations

import json
import re
from typing import Any

_PARAM_OPEN = re.compile(r"<parameter=([^>\s]+)>")
_PARAM_ENDS = ("</parameter>", "</function>", "</tool_call>")
_GLM_PAIR = re.compile(
    r"<arg_key>\s*(.*?)\s*</arg_key>\s*<arg_value>(.*?)(?:</arg_value>|(?=<arg_key>)|\Z)", re.S)
_GLM_HEAD = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?=<arg_key>|\Z)")


def qwen_parameters(body: str) -> dict[str, Any]:
    """`<parameter=k>v</parameter>` pairs; the last one may be unclosed (a cut reply) and is kept
    up to the end of its function block."""
    params: dict[str, Any] = {}
    pos = 0
    while (match := _PARAM_OPEN.search(body, pos)) is not None:
        start = match.end()
        ends = [i for e in _PARAM_ENDS if (i := body.find(e, start)) >= 0]
        following = _PARAM_OPEN.search(body, start)
        if following is not None:
            ends.append(following.start())
        end = min(ends) if ends else len(body)
        params[match.group(1)] = _value(_strip_one_newline(body[start:end]))
        pos = end
    return params


def glm_call(body: str) -> tuple[str, dict[str, Any]] | None:
    """GLM-4.5/4.6/4.7 `name\\n<arg_key>k</arg_key>\\n<arg_value>v</arg_value>…` (a block
    holding only a name is a call without arguments); None if the body is something else."""
    head = _GLM_HEAD.match(body)
    if head is None:
        return None
    rest = body[head.end():]
    pairs = _GLM_PAIR.findall(rest)
    if rest.strip() and not pairs:
        return None
    return head.group(1), {key: _value(value) for key, value in pairs}


def looks_like_glm(body: str) -> bool:
    return _GLM_HEAD.match(body) is not None and "<arg_key>" in body


def _strip_one_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def _value(raw: str) -> Any:
    if raw.strip().startswith(("{", "[")):  # scalars stay text; the schema decides their type
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw
