"""The corrected call a failed call's own error points to.

A tool that rejects a value often names the ones it knows: `no such item: apple; known items:
apples, pears, plums`. Qwen2.5-Coder-0.5B, shown that error, sent `get_stock("apple")` again and
again until the loop guard stopped the run, in every prompt-mode run of the bench task
`stock_single`; it copies a call it is shown value for value. When exactly one word of the error
is a near spelling of a text argument the model sent, the runtime's note on the repeated call
shows the call with that word in its place.
"""

from __future__ import annotations

import difflib
import json
import re

from loopwright.arguments import loads_bounded
from loopwright.messages import ToolCall

_WORD = re.compile(r"[\w][\w.\-]*[\w]|\w")
_MIN_SIMILARITY = 0.8
_MAX_VALUE = 80  # longer values are text, not names to respell
_MAX_ERROR = 2_000  # the part of an error searched for names


def corrected_call(call: ToolCall, error: str) -> str | None:
    """`call` as JSON with one text value replaced by the one word of `error` that is a near
    spelling of it (not the value itself); None when no value has exactly one such word."""
    try:
        arguments = loads_bounded(call.arguments)
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    words = set(_WORD.findall(error[:_MAX_ERROR]))
    for key, value in arguments.items():
        if not isinstance(value, str) or not 0 < len(value) <= _MAX_VALUE:
            continue
        near = [w for w in words if w != value and _near(value, w)]
        if len(near) == 1:
            fixed = {**arguments, key: near[0]}
            return json.dumps({"name": call.name, "arguments": fixed}, ensure_ascii=False)
    return None


def _near(value: str, word: str) -> bool:
    if value.lower() == word.lower():
        return True
    matcher = difflib.SequenceMatcher(None, value.lower(), word.lower())
    return matcher.real_quick_ratio() >= _MIN_SIMILARITY and matcher.ratio() >= _MIN_SIMILARITY
