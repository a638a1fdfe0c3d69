"""Pythonic calls `[get_weather(city='Paris', n=2)]` (Llama 3.2 / 4), read with `ast`, never
`eval`. Too close to ordinary code to trust on shape alone: only known tool names count."""

from __future__ import annotations

import ast
import json
import re

from loopwright.arguments import balanced_end, to_jsonable
from loopwright.wire.text_calls.model import Names, TextCalls, TextToolCall

_LIST_CALL = re.compile(r"\[\s*([A-Za-z_][\w.]*)\s*\(")
_BARE_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def extract_pythonic(text: str, names: Names, found: TextCalls) -> str:
    kept: list[str] = []
    pos = 0
    for match in _LIST_CALL.finditer(text):
        if match.start() < pos or not names.is_known(match.group(1)):
            continue
        end = balanced_end(text, match.start())
        calls = pythonic_calls(text[match.start():end]) if end else None
        if calls and all(names.is_known(c.name) for c in calls):
            kept.append(text[pos:match.start()] + "\n")
            found.calls.extend(calls)
            pos = end or len(text)
    stripped = text[pos:].strip()
    whole = _BARE_CALL.match(stripped)
    if whole and names.is_known(whole.group(1)) and balanced_end(stripped, whole.end() - 1) == len(
            stripped):
        calls = pythonic_calls(f"[{stripped}]")
        if calls:
            found.calls.extend(calls)
            kept.append("\n")
            pos = len(text)
    kept.append(text[pos:])
    return "".join(kept)


def pythonic_calls(source: str) -> list[TextToolCall] | None:
    """Calls from a Python list of calls with literal keyword arguments; None if it is anything
    else (positional arguments, variables, expressions): then it is code, not a call."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls: list[TextToolCall] = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or node.args:
            return None
        name = _dotted_name(node.func)
        if name is None or any(kw.arg is None for kw in node.keywords):
            return None
        try:
            arguments = {str(kw.arg): ast.literal_eval(kw.value) for kw in node.keywords}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        text = json.dumps(to_jsonable(arguments), ensure_ascii=False, default=str)
        calls.append(TextToolCall(name=name, arguments=text, style="pythonic"))
    return calls


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None
