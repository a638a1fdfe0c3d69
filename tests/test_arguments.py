"""`loopwright.arguments`: a model's arguments read as JSON, bounded."""

from __future__ import annotations

import json

import pytest

from loopwright.arguments import MAX_NESTING, ArgumentsError, loads_bounded

TEXTS = ['{"a": 1}', '{}', '{"a": [1, 2, {"b": NaN}]}', '{"a": "\\ud800"}', '{"a": 1e400}',
         '{"a":1, "a":2}', '{\n"a": 1\n}', ' {"a": 1}', '{"a": 1} ', '\ufeff{"a": 1}', '[1]',
         '"x"', 'null', '{"a": 1}x', '{"a": 1}{"b": 2}', '{"a": 1}}', '{"a": 1,}', '{"a" 1}',
         '{', '}', '{"a":}', '{"a": "x\x00"}', '{"a": 1', '']


def outcome(read: object, text: str) -> tuple[str, str]:
    try:
        return "value", repr(read(text))  # type: ignore[operator]
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", TEXTS)
def test_text_reads_as_json_loads_reads_it(text: str) -> None:
    assert outcome(loads_bounded, text) == outcome(json.loads, text)


@pytest.mark.parametrize("text", ['{"a": ' * (MAX_NESTING + 1) + "1" + "}" * (MAX_NESTING + 1),
                                  "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)])
def test_nesting_deeper_than_the_limit_is_refused_before_any_parser_sees_it(text: str) -> None:
    with pytest.raises(ArgumentsError, match=f"deeper than {MAX_NESTING}"):
        loads_bounded(text)
