"""The corpus of malformed arguments and text tool calls that local models really emit
(tests/tools/tool_call_corpus.json), run through the public parsers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright.arguments import ArgumentsError, parse_arguments
from loopwright.wire.text_calls import parse_tool_calls

CORPUS = json.loads((Path(__file__).parent / "tool_call_corpus.json").read_text("utf-8"))
KNOWN: list[str] = CORPUS["known"]


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS["arguments"]) + len(CORPUS["text_calls"]) >= 60


@pytest.mark.parametrize("case", CORPUS["arguments"], ids=lambda c: c["id"])
def test_arguments_corpus(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ArgumentsError) as caught:
            parse_arguments(case["input"])
        assert case["error"] in str(caught.value)
    else:
        assert parse_arguments(case["input"]).value == case["expect"]


@pytest.mark.parametrize("case", CORPUS["text_calls"], ids=lambda c: c["id"])
def test_text_calls_corpus(case: dict[str, Any]) -> None:
    known = case.get("known", KNOWN)
    found = parse_tool_calls(case["text"], None if known == "any" else known,
                             trust_markup=case.get("trust_markup", True))
    assert [c.name for c in found.calls] == [c["name"] for c in case["calls"]]
    for got, want in zip(found.calls, case["calls"], strict=True):
        if "arguments_error" in want:
            with pytest.raises(ArgumentsError, match=want["arguments_error"]):
                parse_arguments(got.arguments)
        else:
            assert parse_arguments(got.arguments).value == want["arguments"]
    assert len(found.malformed) == case["malformed"]
    if "visible" in case:
        assert found.text == case["visible"]
