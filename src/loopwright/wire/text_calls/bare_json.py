"""Bare or fenced JSON calls (Llama 3 `{"name": …, "parameters": {…}}`, several separated by `;`
or newlines; llama.cpp's `{"tool_call": {…}}`; `{"tool_calls": [...]}`). Runs last, on the text
left once markup is removed, so nothing is found twice. JSON in prose is data unless it names a
known tool; JSON standing on its own lines (or in a fence) that has exactly a call's shape is a
call even to an unknown tool, so the model is told the real names instead of it becoming the
answer. Nested JSON is never read: a value that is not a call is skipped whole."""

from __future__ import annotations

import re
from typing import Any

from loopwright.arguments import balanced_end
from loopwright.wire.text_calls.model import Names, TextCalls, TextToolCall
from loopwright.wire.text_calls.objects import (
    LOOSE_NAME,
    call_from_object,
    decode_at,
    is_call_shaped,
    loose_call,
    objects_in,
    unwrap,
)

FENCE = re.compile(
    r"```[ \t]*(?:json|JSON|tool_call|tool_code|javascript)?[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_SEPARATOR = re.compile(r"[ \t]*[;,]?")
_CUT_CALL_HEAD = re.compile(
    r"""\{\s*["'](?:name|tool|function)["']\s*:\s*["'][^"']+["']\s*,\s*"""
    r"""["'](?:arguments|parameters|args|input)["']\s*:""")


def extract_json(text: str, names: Names, found: TextCalls) -> str:
    text = FENCE.sub(lambda m: _fenced_calls(m, names, found), text)
    kept: list[str] = []
    pos = scan = 0
    while (start := _next_object(text, scan)) >= 0:
        end = balanced_end(text, start)
        span = text[start:end]
        alone = _starts_line(text, start) and (end is None or _ends_line(text, end))
        if not _may_be_call(span, names, alone):  # cheap test first: most braces are not calls
            if end is None:
                break
            scan = end
            continue
        if end is None:
            calls = _cut_calls(span, names, alone)
            end = len(text)
        else:
            value, decoded_end = decode_at(text, start)
            calls = json_calls(value, names, alone) if value is not None else None
            end = max(end, decoded_end)
        if calls:
            kept.append(text[pos:start] + "\n")
            found.calls.extend(calls)
            pos = _SEPARATOR.match(text, end).end()  # type: ignore[union-attr]
        scan = end
    kept.append(text[pos:])
    return "".join(kept)


def _may_be_call(span: str, names: Names, alone: bool) -> bool:
    named = [m.group(1) for m in LOOSE_NAME.finditer(span)]
    return any(names.is_known(n) for n in named) or (alone and bool(named))


def _fenced_calls(match: re.Match[str], names: Names, found: TextCalls) -> str:
    objects, problem = objects_in(match.group(1).strip(), allow_loose=False)
    if problem or not objects:
        return match.group(0)
    calls = json_calls(objects, names, True)
    if not calls:
        return match.group(0)
    found.calls.extend(calls)
    return "\n"


def json_calls(value: Any, names: Names, alone: bool) -> list[TextToolCall] | None:
    value = unwrap(value)
    values = value if isinstance(value, list) else [value]
    calls = [call_from_object(unwrap(v), style="json", allow_flat=False) for v in values]
    if not calls or any(c is None for c in calls):
        return None
    found = [c for c in calls if c is not None]
    if all(names.is_known(c.name) for c in found) or (alone and is_call_shaped(value)):
        return found
    return None


def _cut_calls(span: str, names: Names, alone: bool) -> list[TextToolCall] | None:
    """A call object cut off at the end of the text (the reply hit its limit mid-call). It is
    still a call — never the answer — and its arguments are reported as cut off. The name must
    come early: a stray `{` far before a call is not the start of one."""
    head = span[:200]
    known = any(names.is_known(m.group(1)) for m in LOOSE_NAME.finditer(head))
    if not known and not (alone and _CUT_CALL_HEAD.match(span)):
        return None
    call = loose_call(span, style="json")
    if call is None:
        return None
    if call.arguments == "{}":  # cut before the arguments began
        call = TextToolCall(name=call.name, arguments=span.strip(), style="json")
    return [call]


def _next_object(text: str, start: int) -> int:
    brace = text.find("{", start)
    bracket = text.find("[", start)
    while bracket >= 0 and not text[bracket + 1:bracket + 40].lstrip().startswith("{"):
        bracket = text.find("[", bracket + 1)  # only lists of objects can be lists of calls
    options = [i for i in (brace, bracket) if i >= 0]
    return min(options) if options else -1


def _starts_line(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    return not text[line_start:index].strip()


def _ends_line(text: str, index: int) -> bool:
    line_end = text.find("\n", index)
    rest = text[index:] if line_end < 0 else text[index:line_end]
    return not rest.strip(" \t;,")
