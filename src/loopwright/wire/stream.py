"""The one stream accumulator every wire adapter feeds.

Adapters call `text()`, `reasoning()` and `tool_call_delta()` (by index) as SSE events arrive; the
accumulator forwards text and reasoning to the listener at once and assembles the final message.
Deltas are kept as lists of strings and joined once, so a long reply costs no quadratic copying.

Reasoning written inline as `<think>…</think>` at the start of the text (DeepSeek-R1, Qwen3 and
their distills on Groq, the HF router, local servers) is split off into reasoning as it streams:
the opening tag is held until it is complete, and the answer starts after the closing one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopwright.messages import FinishReason, Message, ModelResponse, ToolCall, Usage

DeltaListener = Callable[[str], None]
ToolArgsListener = Callable[[str, str], None]  # (call name, arguments fragment)

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class ListenerFailed(Exception):
    """A listener's own error (the user's callback, the CLI's renderer, serve's writer), carried
    out of a wire format's parser past its "malformed stream event" handling — a listener's
    `ValueError` is no decoding error of the stream — to be raised as itself (`error`). The
    accumulator catches it where it calls a listener: a `try` costs nothing until it catches,
    where a wrapper around each listener was a call more on every delta."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _PendingCall:
    __slots__ = ("args", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.args: list[str] = []


class StreamAccumulator:
    """Builds one `ModelResponse` from streamed deltas."""

    def __init__(
        self,
        on_text: DeltaListener | None = None,
        on_reasoning: DeltaListener | None = None,
        on_tool_args: ToolArgsListener | None = None,
    ) -> None:
        self._on_text = on_text
        self._on_reasoning = on_reasoning
        self._on_tool_args = on_tool_args
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int | str, _PendingCall] = {}
        self.finish_reason: FinishReason | None = None
        self.usage = Usage(requests=1)
        self.model = ""
        self.provider_data: dict[str, Any] = {}
        self.events_seen = 0
        self._think: str = "start"  # start → thinking → answer (or straight to answer)
        self._held = ""  # text not yet known to be answer or reasoning
        self._trim_answer_start = False

    def text(self, delta: str) -> None:
        if not delta:
            return
        if self._think == "answer":
            self._answer(delta)
            return
        self._held += delta
        if self._think == "start":
            head = self._held.lstrip()
            if not head or (THINK_OPEN.startswith(head) and head != THINK_OPEN):
                return  # nothing yet, or "<thi" that may become the tag
            if not head.startswith(THINK_OPEN):
                self._think, held, self._held = "answer", self._held, ""
                self._answer(held)
                return
            self._think, self._held = "thinking", head[len(THINK_OPEN):]
        if not self._reasoning:  # the thought starts at its first visible character
            self._held = self._held.lstrip()
            if not self._held:
                return
        end = self._held.find(THINK_CLOSE)
        if end >= 0:
            thought, rest = self._held[:end], self._held[end + len(THINK_CLOSE):]
            self._think, self._held, self._trim_answer_start = "answer", "", True
            self.reasoning(thought.rstrip())
            self._answer(rest)
            return
        keep = _partial_suffix(self._held, THINK_CLOSE)
        self.reasoning(self._held[:len(self._held) - keep])
        self._held = self._held[len(self._held) - keep:]

    def _answer(self, delta: str) -> None:
        if self._trim_answer_start:
            delta = delta.lstrip()
            if not delta:
                return
            self._trim_answer_start = False
        self._text.append(delta)
        if self._on_text is not None:
            try:
                self._on_text(delta)
            except Exception as exc:
                raise ListenerFailed(exc) from exc

    def _flush_held(self) -> None:
        held, self._held = self._held, ""
        if self._think == "thinking":
            self.reasoning(held)  # cut off while thinking: there is no answer
        elif held:
            self._think = "answer"
            self._answer(held)

    def reasoning(self, delta: str) -> None:
        if delta:
            self._reasoning.append(delta)
            if self._on_reasoning is not None:
                try:
                    self._on_reasoning(delta)
                except Exception as exc:
                    raise ListenerFailed(exc) from exc

    def tool_call_delta(
        self,
        index: int | str,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> None:
        """Merge one fragment of the call at `index`; id and name may come once or never."""
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _PendingCall()
        if id:
            call.id = id
        if name and not call.name:  # some servers repeat the name on every fragment
            call.name = name
        if arguments:
            call.args.append(arguments)
            if self._on_tool_args is not None:
                try:
                    self._on_tool_args(call.name, arguments)
                except Exception as exc:
                    raise ListenerFailed(exc) from exc

    def set_tool_call_arguments(self, index: int | str, arguments: str) -> None:
        """Replace a call's arguments with their full text (some formats resend it at the end)."""
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _PendingCall()
        call.args = [arguments]

    def build(self) -> ModelResponse:
        self._flush_held()
        text = "".join(self._text)
        if self._think == "answer" and not self._reasoning and THINK_CLOSE in text \
                and THINK_OPEN not in text:
            # the chat template opened <think> in the prompt: only the closing tag is in the reply
            thought, _, text = text.partition(THINK_CLOSE)
            self._reasoning.append(thought.strip())
            text = text.lstrip()
        return _response(text, "".join(self._reasoning),
                         [(p.id, p.name, "".join(p.args)) for p in self._calls.values()],
                         self.finish_reason, self.usage, self.model, self.provider_data)


PlainCall = tuple[str | None, str | None, str | None]  # a call's id, name and arguments


def whole_reply(parts: list[tuple[bool, str]], calls: list[PlainCall], *,
                finish_reason: FinishReason | None, usage: Usage, model: str,
                provider_data: dict[str, Any] | None = None) -> ModelResponse:
    """A plain (unstreamed) reply, as a `StreamAccumulator` fed the same would build it:
    `parts` its text (False) and reasoning (True) in the body's order, `calls` in order. Without
    a think tag in the text (the common case) that is the parts joined, with no accumulator
    (its object, a pending call per call, the state machine); with one, the accumulator's think
    split reads the parts in order."""
    text = "".join([piece for reasoning, piece in parts if not reasoning])
    if THINK_OPEN in text or THINK_CLOSE in text:
        acc = StreamAccumulator()
        for reasoning, piece in parts:
            if reasoning:
                acc.reasoning(piece)
            else:
                acc.text(piece)
        for n, (id, name, arguments) in enumerate(calls):
            acc.tool_call_delta(n, id=id, name=name, arguments=arguments)
        acc.finish_reason, acc.usage, acc.model = finish_reason, usage, model
        if provider_data is not None:
            acc.provider_data = provider_data
        return acc.build()
    return _response(text, "".join([piece for reasoning, piece in parts if reasoning]), calls,
                     finish_reason, usage, model,
                     {} if provider_data is None else provider_data)


def _response(text: str, reasoning: str, calls: list[PlainCall],
              finish_reason: FinishReason | None, usage: Usage, model: str,
              provider_data: dict[str, Any]) -> ModelResponse:
    """The reply: each call with a name (numbered among all of them when it has no id), the
    finish reason the calls imply when the server gave none (or said the turn ended)."""
    built = [ToolCall(id=id or f"call_{n}", name=name, arguments=arguments or "{}")
             for n, (id, name, arguments) in enumerate(calls) if name]
    _ensure_unique_ids(built)
    finish = finish_reason or ("tool_calls" if built else "end_turn")
    if built and finish == "end_turn":
        finish = "tool_calls"
    message = Message(role="assistant", content=text, tool_calls=built,
                      reasoning=reasoning or None, provider_data=provider_data)
    return ModelResponse(message=message, finish_reason=finish, usage=usage, model=model)


def _ensure_unique_ids(calls: list[ToolCall]) -> None:
    """Servers that send `id: ''` for every call would make results ambiguous; number them."""
    seen: set[str] = set()
    for n, call in enumerate(calls):
        if not call.id or call.id in seen:
            call = calls[n] = ToolCall(id=f"call_{n}_{len(seen)}", name=call.name,
                                       arguments=call.arguments)
        seen.add(call.id)


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest end of `text` that is the start of `marker`."""
    for length in range(min(len(text), len(marker) - 1), 0, -1):
        if marker.startswith(text[-length:]):
            return length
    return 0
