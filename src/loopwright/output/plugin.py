"""`output_type=`: ask for, stream, check and (up to `output_retries` times) correct the model's
structured answer; the validated value becomes `RunResult.output`.

Two ways to ask, chosen per provider: a `final_result` tool whose arguments are the answer (every
API mode, native or prompt tool calls), or OpenAI's `json_schema` response format (the reply
text is the answer). Either way the answer reaches `on_answer` as JSON text: a valid one ends
the run, an invalid one goes back to the model with the validation errors.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from loopwright import notes
from loopwright.errors import OutputValidationError
from loopwright.events import PartialOutput
from loopwright.output.spec import FINAL_TOOL, OutputSpec, describe_invalid
from loopwright.plugins import LoopPlugin
from loopwright.wire.stream import DeltaListener

if TYPE_CHECKING:
    from loopwright.messages import ModelRequest, ModelResponse
    from loopwright.plugins import RunView
    from loopwright.result import RunResult

OutputMode = Literal["tool", "native"]


class StructuredOutput(LoopPlugin):
    """One per agent; each run gets its own `_RunOutput` (`for_run`)."""

    def __init__(self, spec: OutputSpec[Any], *, mode: OutputMode, retries: int) -> None:
        self.spec = spec
        self.mode = mode
        self.retries = retries

    def for_run(self, run: RunView) -> LoopPlugin:
        return _RunOutput(self)


class _OutputText:
    """The text listener of a run with an output type: in native mode the text is the answer's
    JSON, grown into partial outputs; in either mode a reply that starts anew starts the
    partial output anew (in tool mode it grows from `final_result`'s arguments)."""

    def __init__(self, output: _RunOutput, run: RunView, listener: DeltaListener) -> None:
        self.output, self.run, self.listener = output, run, listener
        self.grows = output.mode == "native"

    def __call__(self, delta: str) -> None:
        self.listener(delta)
        if self.grows:
            self.output._grow(self.run, delta)

    def reply_anew(self) -> None:
        self.output.reply_anew()
        inner = getattr(self.listener, "reply_anew", None)
        if inner is not None:
            inner()


class _RunOutput(LoopPlugin):
    """The structured output of one run: failures so far, the value once valid."""

    def __init__(self, owner: StructuredOutput) -> None:
        self.spec = owner.spec
        self.mode = owner.mode
        self.retries = owner.retries
        self.failures = 0
        self.value: Any = None
        self.valid = False
        self.streamed: list[str] = []  # JSON text of this reply's answer so far
        self.shown: Any = None  # the JSON of the last partial output looked at

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        self.streamed.clear()
        if self.mode == "native":
            request.response_format = self.spec.response_format()
        elif request.tool_choice != "none":  # the budget summary turns tools off: text then
            request.tools.append(self.spec.tool_spec())

    def text_filter(self, run: RunView, listener: DeltaListener) -> DeltaListener:
        return _OutputText(self, run, listener)

    def reply_anew(self) -> None:
        """The reply starts again (a fallback model's, a retry's): its partial output too."""
        self.streamed.clear()
        self.shown = None

    def on_tool_args(self, run: RunView, name: str, delta: str) -> None:
        if name == FINAL_TOOL:
            self._grow(run, delta)

    def _grow(self, run: RunView, delta: str) -> None:
        self.streamed.append(delta)
        partial = self.spec.partial("".join(self.streamed))
        if partial is None or partial == self.shown:
            return
        self.shown = partial
        try:
            value = self.spec.validate_partial(partial)
        except ValueError:  # a required field not there yet: nothing valid to show
            return
        run.emit(PartialOutput(output=value, data=partial, agent=run.agent_tag))

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        """A `final_result` call is the answer: it becomes the reply's text (so the history
        holds it as an answer, with no call left open) and the other calls are dropped."""
        message = response.message
        final = [call for call in message.tool_calls if call.name == FINAL_TOOL]
        if not final:
            return
        others = [call.name for call in message.tool_calls if call.name != FINAL_TOOL]
        if others:
            run.status("output_retry", f"tool calls made with the final answer not run: "
                       f"{', '.join(others)}", {"dropped": others})
        message.content = final[-1].arguments
        message.tool_calls = []
        if response.finish_reason == "tool_calls":
            response.finish_reason = "end_turn"

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        try:
            self.value = self.spec.parse_arguments(answer)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError too
            return self._invalid(run, exc)
        self.valid = True
        return None

    def _invalid(self, run: RunView, exc: ValueError) -> str:
        self.failures += 1
        problems = describe_invalid(exc)
        if self.failures > self.retries:
            raise OutputValidationError(
                f"the structured output was still invalid after {self.retries} "
                f"correction(s): {problems.splitlines()[0].removeprefix('- ')}")
        run.status("output_retry", f"structured output invalid; sent back with the errors "
                   f"(try {self.failures} of {self.retries})",
                   {"attempt": self.failures, "errors": problems})
        how = (f"Call the `{FINAL_TOOL}` tool with it as the arguments" if self.mode == "tool"
               else "Reply with only the JSON object")
        schema = json.dumps(self.spec.schema, separators=(",", ":"))
        return notes.render(notes.OUTPUT_INVALID, problems=problems, how=how, schema=schema)

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        if self.valid and result.stop_reason == "completed":
            result.text = result.output
            result.output = self.value
