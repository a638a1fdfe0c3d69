"""Tag-delimited calls: Hermes / Qwen / Granite `<tool_call>…</tool_call>` (JSON, Qwen3-Coder
`<function=…>` or GLM-4 `name<arg_key>…` inside), Phi / Granite-3.0 `<|tool_call|>`, Llama 3.1
`<function=name>{…}</function>`, and a call wrapped in `<tool_response>` by a small model that
confused the tags."""

from __future__ import annotations

import json
import re

from loopwright.wire.text_calls.model import MalformedCall, Names, TextCalls, TextToolCall
from loopwright.wire.text_calls.objects import (
    call_from_object,
    is_call_shaped,
    objects_in,
    preview,
    strip_fence,
    unwrap,
)
from loopwright.wire.text_calls.xml_params import glm_call, looks_like_glm, qwen_parameters

TAG_OPEN = re.compile(
    r"<tool_call>|<\|tool_call\|>|<tool_response>|<function=([A-Za-z_][\w.\-]*)>")
_CALL_OPEN = re.compile(r"<tool_call>|<\|tool_call\|>")
_TAG_CLOSE = {"<tool_call>": ("</tool_call>", "<|/tool_call|>"),
              "<|tool_call|>": ("<|/tool_call|>", "</tool_call>"),
              "<tool_response>": ("</tool_response>",)}
_RESPONSE_OPEN = re.compile("<tool_response>")
_INNER_FUNCTION = re.compile(r"<function=([A-Za-z_][\w.\-]*)>(.*?)(?:</function>|$)", re.S)
STRAY_CLOSERS = ("</tool_call>", "<|/tool_call|>")


def extract_tags(text: str, names: Names, found: TextCalls) -> str:
    kept: list[str] = []
    pos = 0
    while (match := TAG_OPEN.search(text, pos)) is not None:
        opener = match.group(0)
        body_start = match.end()
        function = match.group(1)
        closes: tuple[str, ...]
        if function:
            closes, openers = ("</function>",), TAG_OPEN
        else:
            closes = _TAG_CLOSE[opener]
            openers = _RESPONSE_OPEN if opener == "<tool_response>" else _CALL_OPEN
        body_end, block_end, closed = _block_bounds(text, body_start, closes, openers)
        body = text[body_start:body_end]
        calls, problem = _read_block(opener, function, body, closed, names)
        if names.accepts(calls, problem):
            kept.append(text[pos:match.start()])
            kept.append("\n")
            found.calls.extend(calls)
            if problem:
                found.malformed.append(MalformedCall(text=text[match.start():block_end],
                                                     problem=problem))
            pos = block_end
        else:
            kept.append(text[pos:body_start])
            pos = body_start
    kept.append(text[pos:])
    remaining = "".join(kept)
    for stray in STRAY_CLOSERS:
        remaining = remaining.replace(stray, "")
    return remaining


def _read_block(opener: str, function: str | None, body: str, closed: bool, names: Names
                ) -> tuple[list[TextToolCall], str | None]:
    if opener == "<tool_response>":
        return _wrapped_in_response(body), None
    starts = ("{", "<parameter=") if function else ("{", "[", "`", "<function=")
    stripped = body.lstrip()
    if not closed and not stripped.startswith(starts) and not looks_like_glm(stripped):
        return [], None  # the tag merely mentioned in prose
    if function:
        return function_tag_call(function, body), None
    return calls_in_block(body, names)


def _wrapped_in_response(body: str) -> list[TextToolCall]:
    """Only an unmistakable call counts: a made-up tool result stays text."""
    objects, problem = objects_in(strip_fence(body.strip()), allow_loose=False)
    if problem or not objects or not all(is_call_shaped(o) for o in objects):
        return []
    calls = [call_from_object(o, style="hermes", allow_flat=False) for o in objects]
    return [c for c in calls if c is not None]


def _block_bounds(text: str, start: int, closes: tuple[str, ...], openers: re.Pattern[str]
                  ) -> tuple[int, int, bool]:
    """(end of body, end of block, closed?) — a block ends at its closing tag, at the next opening
    tag (models often omit closings between calls), or at the end of the text."""
    ends = [(text.find(c, start), len(c)) for c in closes]
    ends = [(i, n) for i, n in ends if i >= 0]
    next_open = openers.search(text, start)
    candidates = ends + ([(next_open.start(), 0)] if next_open else [])
    if not candidates:
        return len(text), len(text), False
    index, length = min(candidates)
    return index, index + length, length > 0


def calls_in_block(body: str, names: Names) -> tuple[list[TextToolCall], str | None]:
    body = strip_fence(body.strip())
    if not body:
        return [], "the <tool_call> block is empty"
    if body.startswith("<function="):
        inner = _INNER_FUNCTION.match(body)
        if inner:
            return function_tag_call(inner.group(1), inner.group(2)), None
    if body[0] not in "{[":
        glm = glm_call(body)
        # a bare word is a call without arguments only if it names a tool: else it is prose
        if glm is not None and (glm[1] or "<arg_key>" in body or names.is_known(glm[0])):
            name, arguments = glm
            return [TextToolCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False),
                                 style="xml")], None
    objects, problem = objects_in(body, allow_loose=True)
    calls: list[TextToolCall] = []
    for obj in (unwrap(o) for o in objects):
        for item in obj if isinstance(obj, list) else [obj]:
            call = call_from_object(item, style="hermes", allow_flat=True)
            if call is None:
                return [], (f"no tool name in {preview(json.dumps(item, ensure_ascii=False))}: "
                            'each call needs "name" and "arguments"')
            calls.append(call)
    if not calls:
        return [], problem or f"no JSON object in the block: {preview(body)}"
    return calls, None


def function_tag_call(name: str, body: str) -> list[TextToolCall]:
    """`<function=name>{json}</function>` (Llama 3.1) or Qwen3-Coder `<parameter=k>v` pairs."""
    if "<parameter=" in body:
        arguments = json.dumps(qwen_parameters(body), ensure_ascii=False)
        return [TextToolCall(name=name, arguments=arguments, style="xml")]
    return [TextToolCall(name=name, arguments=body.strip() or "{}", style="function_tag")]
