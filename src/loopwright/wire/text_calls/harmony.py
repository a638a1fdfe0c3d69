"""gpt-oss harmony messages left in the text by a server that did not parse them:
`<|channel|>analysis<|message|>…<|end|>` is reasoning,
`<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`
(or `to=` before the channel) is a call, and `<|channel|>final<|message|>…` is the answer."""

from __future__ import annotations

import re

from loopwright.wire.text_calls.model import Names, TextCalls, TextToolCall

MARKERS = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", "<|call|>", "<|return|>")
_MESSAGE = re.compile(
    r"((?:<\|start\|>|<\|channel\|>)[^\n]*?)<\|message\|>(.*?)"
    r"(?:<\|end\|>|<\|call\|>|<\|return\|>|(?=<\|start\|>)|(?=<\|channel\|>)|\Z)", re.S)
_RECIPIENT = re.compile(r"\bto=(?:functions\.)?([A-Za-z_][\w.\-]*)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")


def extract_harmony(text: str, names: Names, found: TextCalls) -> str:
    if "<|message|>" not in text:
        return text
    kept: list[str] = []
    reasoning: list[str] = []
    pos = 0
    for match in _MESSAGE.finditer(text):
        header, content = match.group(1), match.group(2)
        kept.append(text[pos:match.start()])
        pos = match.end()
        recipient = _RECIPIENT.search(header)
        channel = _CHANNEL.search(header)
        if recipient is not None:
            found.calls.append(TextToolCall(name=recipient.group(1),
                                            arguments=content.strip() or "{}", style="harmony"))
            kept.append("\n")
        elif channel is not None and channel.group(1) == "analysis":
            reasoning.append(content.strip())
        else:
            kept.append(content)
    kept.append(text[pos:])
    if reasoning:
        found.reasoning = "\n\n".join(r for r in (found.reasoning, *reasoning) if r)
    rest = "".join(kept)
    for token in ("<|end|>", "<|start|>assistant", "<|start|>", "<|return|>", "<|call|>"):
        rest = rest.replace(token, "")
    return rest
