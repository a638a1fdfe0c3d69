"""Calls in special-token sections, as servers without the model's parser pass them through:

- DeepSeek V3 `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{…}
  \\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>`, and V3.1 / R1-0528 `…<｜tool▁call▁begin｜>NAME
  <｜tool▁sep｜>{…}<｜tool▁call▁end｜>…`;
- Kimi-K2 `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
  <|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`.

A section may be cut off at the end of the reply; each call then runs to the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from loopwright.wire.text_calls.model import Names, TextCalls, TextToolCall
from loopwright.wire.text_calls.objects import strip_fence

DS_OPEN, DS_CLOSE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_OPEN, DS_CALL_CLOSE = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
_DS_SEP = "<｜tool▁sep｜>"
_DS_NOISE = ("<｜end▁of▁sentence｜>", "<｜Assistant｜>")
KIMI_OPEN, KIMI_CLOSE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
KIMI_CALL_OPEN, KIMI_CALL_CLOSE = "<|tool_call_begin|>", "<|tool_call_end|>"
_KIMI_ARGS = "<|tool_call_argument_begin|>"
_KIMI_ID = re.compile(r"\s*(?:functions\.)?([A-Za-z_][\w.\-]*?)(?::\d+)?\s*(?=<|\{|\Z)")


def extract_deepseek(text: str, names: Names, found: TextCalls) -> str:
    for token in _DS_NOISE:
        text = text.replace(token, "")
    return _sections(text, DS_OPEN, DS_CLOSE, DS_CALL_OPEN, DS_CALL_CLOSE, _deepseek_call, found)


def extract_kimi(text: str, names: Names, found: TextCalls) -> str:
    return _sections(text, KIMI_OPEN, KIMI_CLOSE, KIMI_CALL_OPEN, KIMI_CALL_CLOSE, _kimi_call,
                     found)


def _sections(text: str, opener: str, closer: str, call_open: str, call_close: str,
              read: Callable[[str], TextToolCall | None], found: TextCalls) -> str:
    kept: list[str] = []
    pos = 0
    while True:
        start = _first(text, (opener, call_open), pos)
        if start < 0:
            break
        end = text.find(closer, start)
        block_end = len(text) if end < 0 else end + len(closer)
        section = text[start:block_end if end < 0 else end]
        read_calls = (read(body) for body in _call_bodies(section, call_open, call_close))
        calls = [c for c in read_calls if c is not None]
        kept.append(text[pos:start] + ("\n" if calls else section))
        found.calls.extend(calls)
        pos = block_end
    kept.append(text[pos:])
    return "".join(kept)


def _first(text: str, needles: tuple[str, ...], start: int) -> int:
    hits = [i for n in needles if (i := text.find(n, start)) >= 0]
    return min(hits) if hits else -1


def _call_bodies(section: str, call_open: str, call_close: str) -> list[str]:
    bodies = []
    for piece in section.split(call_open)[1:]:
        bodies.append(piece.split(call_close, 1)[0])
    return bodies


def _deepseek_call(body: str) -> TextToolCall | None:
    kind, sep, rest = body.partition(_DS_SEP)
    if not sep:
        return None
    kind = kind.strip()
    if kind == "function":  # V3: the name on the first line, the arguments fenced below it
        name, _, arguments = rest.partition("\n")
        return TextToolCall(name=name.strip(), arguments=strip_fence(arguments.strip()) or "{}",
                            style="deepseek")
    if not kind:
        return None
    return TextToolCall(name=kind, arguments=strip_fence(rest.strip()) or "{}", style="deepseek")


def _kimi_call(body: str) -> TextToolCall | None:
    head, sep, arguments = body.partition(_KIMI_ARGS)
    if not sep:
        brace = body.find("{")
        head, arguments = (body, "") if brace < 0 else (body[:brace], body[brace:])
    match = _KIMI_ID.match(head)
    if match is None or not match.group(1):
        return None
    return TextToolCall(name=match.group(1), arguments=arguments.strip() or "{}", style="kimi")
