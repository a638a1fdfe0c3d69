"""`answer_by_call`: every reply of a small local model begun as a call; the answer is a call too.

Qwen2.5-Coder-1.5B's most common failures on the dev2 split end its turn with prose and no call
— a promise to retry after an error, an explanation of a traceback instead of a corrected run
(docs/benchmarks.md, "Real models (issue 28)"). Asking for a call with `tool_choice: "required"`
does not work on llama.cpp (the model writes free text until the output limit); beginning the
reply for the model with its chat template's call opening does (`Profile.call_opening`,
`ModelClient.call_opening`: llama.cpp continues the reply and reads the call). So, with this
setting, every request that offers tools also offers `final_answer`, and the reply is begun as
a call: the model chooses which tool, including the one that answers. A call of
`final_answer` alone becomes the reply's text, the answer; beside other calls it is dropped
(they run, and the model answers after their results).

Opt-in (`answer_by_call = True`), and only where the family's opening is known and the server
continues a reply (elsewhere the setting does nothing)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from loopwright.messages import ModelRequest, ModelResponse, ToolCall, ToolSpec
from loopwright.plugins import LoopPlugin, RunView

if TYPE_CHECKING:
    from loopwright.endpoints.fallback import ProviderChain

FINAL_ANSWER = ToolSpec(
    name="final_answer",
    description="Give the user your final answer. Call it once the results you have answer the "
                "request (or show it cannot be done); until then call the other tools.",
    parameters={"type": "object",
                "properties": {"answer": {"type": "string",
                                          "description": "the whole answer, for the user"}},
                "required": ["answer"]},
)


class AnswerByCall(LoopPlugin):
    """Offers `final_answer` and begins every reply that may call tools as a call."""

    def __init__(self, chain: ProviderChain) -> None:
        self._chain = chain

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        if not request.tools or request.tool_choice == "none":  # an answer without tools
            return
        opening = await self._chain.current.call_opening()
        if not opening:
            return
        request.tools.append(FINAL_ANSWER)
        request.prefill = opening

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        message = response.message
        calls = message.tool_calls or _written_answer_call(message.content)
        answer = next((c for c in calls if c.name == FINAL_ANSWER.name), None)
        if answer is None:
            return
        others = [c for c in calls if c is not answer]
        if others:
            message.tool_calls = others
            return
        message.tool_calls = []
        message.content = answer_text(answer.arguments)
        if response.finish_reason == "tool_calls":
            response.finish_reason = "end_turn"


def answer_text(arguments: str) -> str:
    """The answer a `final_answer` call gives: its `answer` string, else its arguments as
    written (a model that put the answer under another key still answered)."""
    try:
        parsed: Any = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(parsed, dict):
        value = parsed.get("answer")
        if isinstance(value, str):
            return value
        if len(parsed) == 1:
            only = next(iter(parsed.values()))
            return only if isinstance(only, str) else json.dumps(only, ensure_ascii=False)
    return arguments


def _written_answer_call(text: str) -> list[ToolCall]:
    """A `final_answer` call the server gave back as text (the reply begun for the model, then
    what it wrote): read here, as the text-call reader knows only the run's own tools."""
    start = text.find("{")
    if not text.startswith("<tool_call>") or start < 0:
        return []
    body = text[start:].split("</tool_call>", 1)[0].strip()
    try:
        parsed = json.loads(body)
    except ValueError:
        return []
    if not isinstance(parsed, dict) or parsed.get("name") != FINAL_ANSWER.name:
        return []
    arguments = parsed.get("arguments")
    return [ToolCall(id="final_answer", name=FINAL_ANSWER.name,
                     arguments=arguments if isinstance(arguments, str)
                     else json.dumps(arguments, ensure_ascii=False))]
