"""The narration check: a final reply that announces a tool action but makes no call.

Local models often end a reply with "I'll read the file now." and emit no call, which would end
the run with a promise instead of an answer; or they tell the user how to make the call ("you can
call the `get_stock` function with the argument "pears"" — Qwen2.5-Coder-1.5B, with the apples'
count in hand). When a final reply ends by announcing a tool action, or describes a call of an
offered tool, the model is told once to make the call (or answer) — or, when the request had
switched tools off, to answer from what it has. A reply that describes a call it quotes the
argument of is set aside (left out of later requests), and the model is shown only that call:
shown its own sentence, the 1.5B wrote it again. At most one nudge per run: a model that
narrates again after being nudged is taken at its word, so the run can never loop on this.

Only the last sentence counts: a reply that begins "I need to look at the inventory file…" and
ends "…the cost is not provided, so I cannot determine it." is an answer (a real 1.5B answer was
sent back so). It reads English words ("I'll", "let me", "you can call"): it is for small local
models prompted in English, it is opt-in (`review = "all"` or named; never under "auto"), and a
reply in another language is never sent back by it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from loopwright import notes
from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, send_back, set_aside

if TYPE_CHECKING:
    from loopwright.messages import Message
    from loopwright.review.view import ReviewView

_ACTION = (
    r"(?:use|call|run|execute|invoke|read|open|check|look|search|grep|list|inspect|examine|view"
    r"|fetch|create|write|edit|update|modify|query|try|start|load|scan|explore|browse|find"
    r"|compute|calculate|test|install|delete|remove|rename|move|patch|apply)"
)
_NARRATION = re.compile(
    r"\b(?:I['’]ll|I will|I am going to|I['’]m going to|I shall|let me|let['’]s|now I['’]ll"
    r"|next,? I['’]ll|first,? I['’]ll|I need to|I['’]m about to|I am about to)"
    r"\s+(?:now\s+|first\s+|quickly\s+|go ahead and\s+|just\s+|then\s+)*" + _ACTION + r"\b",
    re.IGNORECASE,
)
_DESCRIBED = re.compile(
    r"\b(?:you|we)\s+(?:can|could|would|will|need to|should|must)\s+(?:now\s+|then\s+)?"
    r"(?:call|use|invoke|run)\b", re.IGNORECASE)
_TAIL_CHARS = 300  # an announcement is the end of a reply, not something said along the way


def narrates_tool_use(text: str, tools: Collection[str] = ()) -> bool:
    """True when the reply ends by announcing a tool action ("Let me run the tests.") or by
    describing a call of one of `tools` ("you can call the `get_stock` function"), rather than
    answering. Only the last sentence (at most 300 characters) is looked at."""
    stripped = text.strip()
    if not stripped or stripped.endswith("?"):
        return False
    tail = _last_sentence(stripped.rsplit("\n\n", 1)[-1][-_TAIL_CHARS:])
    if _NARRATION.search(tail) is not None:
        return True
    return _DESCRIBED.search(tail) is not None and any(
        re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", tail) for name in tools)


_SENTENCE_END = re.compile(r"(?<=[.!])\s+(?=\S)")


_CLAUSE_END = re.compile(r"[:;]\s+")


def _last_sentence(paragraph: str) -> str:
    """The last sentence, from its last clause after a colon or semicolon ("I will use the
    numbers you gave: the average is 6." ends with the average, not with the promise)."""
    sentences = [s for s in _SENTENCE_END.split(paragraph) if s.strip()]
    last = sentences[-1] if sentences else paragraph
    clauses = [c for c in _CLAUSE_END.split(last) if c.strip()]
    return clauses[-1] if clauses else last


_QUOTED = re.compile(r"[`\"'“]+([^`\"'“”\n]{1,80})[`\"'”]+")


def described_call(text: str, tools: Collection[str],
                   schema_of: Callable[[str], dict[str, Any] | None]) -> str | None:
    """The call a reply describes, as JSON, when it names one offered tool whose one required
    parameter takes text and quotes one value for it ("call the `get_stock` function with the
    argument `"pears"`": Qwen2.5-Coder-1.5B wrote that sentence again, word for word, when only
    told to make the call); else None. Shown to the model as an example, never run."""
    named = [name for name in tools if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]
    if len(named) != 1:
        return None
    schema = schema_of(named[0]) or {}
    required = schema.get("required") or []
    prop = (schema.get("properties") or {}).get(required[0]) if len(required) == 1 else None
    if not isinstance(prop, dict) or prop.get("type") != "string":
        return None
    values = {v.strip() for v in _QUOTED.findall(text)} - {named[0], ""}
    if len(values) != 1:
        return None
    return json.dumps({"name": named[0], "arguments": {required[0]: values.pop()}},
                      ensure_ascii=False)


class Narration(Check):
    """Sends back, once per run, a final reply that says it will use a tool but calls none."""

    name = "narration"
    reads_prose = True

    def __init__(self, *, prompt_mode: bool) -> None:
        self.prompt_mode = prompt_mode
        self.nudged = False  # this run's one nudge was given

    def for_run(self) -> Check:
        return Narration(prompt_mode=self.prompt_mode)

    async def review(self, view: ReviewView) -> Verdict | None:
        names = list(view.tools)
        if self.nudged or not names or not narrates_tool_use(
                view.answer, _not_failed(view.history, names)):
            return None
        self.nudged = True
        reason = "the reply announced a tool call but made none"
        if view.tools_off:  # "make the call" would contradict the request
            return send_back(notes.text(notes.NARRATION_TOOLS_OFF), reason)
        example = described_call(view.answer, names, view.schema_of)
        if example is not None:
            # the call is known: the description is set aside, and only the call is named
            # (shown its own sentence, the 1.5B wrote it again word for word under the longer
            # note; set aside and told "Make the call now: {…}", it made the call)
            shown = f"<tool_call>\n{example}\n</tool_call>" if self.prompt_mode else example
            return set_aside(notes.render(notes.MAKE_THE_CALL, call=shown), reason)
        how = ("write the <tool_call> block now" if self.prompt_mode
               else "make the tool call now (a real tool call, not a description of one)")
        return send_back(notes.render(notes.NARRATION, how=how), reason)


def _not_failed(history: Sequence[Message], names: Collection[str]) -> list[str]:
    """The tools whose last call in this run did not fail: telling the user a failed tool can be
    called again is an answer (0.5B: "the weather service is unavailable (HTTP 503)… you can call
    the `get_weather` function again"; nudged, it invented the weather)."""
    failed: dict[str, bool] = {}
    for message in history:
        if message.role == "tool" and message.name:
            failed[message.name] = message.is_error
    return [name for name in names if not failed.get(name, False)]
