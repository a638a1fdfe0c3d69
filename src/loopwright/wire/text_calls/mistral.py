"""Mistral `[TOOL_CALLS] [{…}, …]`, `[TOOL_CALLS]name{…}` and `[TOOL_CALLS]name[ARGS]{…}`."""

from __future__ import annotations

import re

from loopwright.arguments import balanced_end
from loopwright.wire.text_calls.model import Names, TextCalls, TextToolCall
from loopwright.wire.text_calls.objects import call_from_object, decode_at

MARKER = "[TOOL_CALLS]"
_NAMED = re.compile(
    r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*[\w\-]+\s*)?(?:\[ARGS\])?\s*(?=\{)")


def extract_mistral(text: str, names: Names, found: TextCalls) -> str:
    head, *segments = text.split(MARKER)
    kept = [head]
    for segment in segments:
        calls, rest = _segment(segment)
        if calls and names.accepts(calls, None):
            found.calls.extend(calls)
            kept.append("\n" + rest)
        else:
            kept.append(MARKER + segment)
    return "".join(kept)


def _segment(segment: str) -> tuple[list[TextToolCall], str]:
    stripped = segment.lstrip()
    if stripped.startswith(("[", "{")):
        value, end = decode_at(stripped, 0)
        values = value if isinstance(value, list) else [value]
        calls = [call_from_object(v, style="mistral", allow_flat=False) for v in values]
        if value is not None and calls and all(calls):
            return [c for c in calls if c], stripped[end:]
        return [], segment
    named = _NAMED.match(segment)
    if named is None:
        return [], segment
    start = named.end()
    end = balanced_end(segment, start) or len(segment)
    call = TextToolCall(name=named.group(1), arguments=segment[start:end], style="mistral")
    return [call], segment[end:]
