"""Tool calls as text: prompt mode for models without native tools, and the native-mode fallback.

Prompt mode (`tool_call_format="prompt"`): no native schemas are sent. The catalogue and the call
format are rendered into the system prompt (Hermes style), `<tool_call>` blocks are read from the
reply, and results go back as `<tool_response>` blocks in a user message.

Internal history stays native-shaped (assistant messages carry `ToolCall`s, results are `tool`
messages), so `sanitize()`, storage, resuming in native mode and every wire adapter work unchanged;
only the outgoing request is converted, in `before_model`. The visible text never shows call
markup: it is stripped from the stored reply and held back from `text_delta` events while the
reply streams.

Native mode with `text_tool_calls` (the default): a reply with no native calls whose text holds
well-formed calls to known tools is executed as if the calls were native.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from loopwright.messages import Message, ModelResponse, ToolCall, sanitize
from loopwright.plugins import LoopPlugin
from loopwright.tools.arguments import example_arguments
from loopwright.tools.prompt_calls import FORMAT_HINT, MalformedCall, parse_tool_calls
from loopwright.wire.base import ModelRequest, ToolSpec
from loopwright.wire.stream import DeltaListener

if TYPE_CHECKING:
    from loopwright.config import Settings
    from loopwright.loop import RunState
    from loopwright.tools.catalogue import RunCatalogue

MAX_FORMAT_CORRECTIONS = 2  # consecutive replies with only unreadable calls that get a correction

_INSTRUCTIONS = """\
# Tools

This conversation has no built-in tool calling: you call a tool by writing a <tool_call> block \
in your reply, and its result comes back to you in the next user message inside \
<tool_response></tool_response> tags.

To call a tool, write its name and its arguments as one JSON object (double quotes, no comments, \
no trailing commas) inside <tool_call></tool_call> tags:
{format_hint}
Write one block per call; independent calls may go in one reply. After your calls, end your \
reply and wait for the results: never write <tool_response> yourself and never guess a result. \
When you need no tool, answer normally, without <tool_call> blocks.
{example}
The tools you can call, one JSON signature per line:
<tools>
{tools}
</tools>"""


def render_tool_prompt(specs: list[ToolSpec]) -> str:
    """The system-prompt section that teaches the call format and lists the tools. Tools are
    listed last, in order, so that appending a newly activated tool keeps the prefix."""
    if not specs:
        return ""
    first = specs[0]
    example_call = json.dumps({"name": first.name,
                               "arguments": example_arguments(first.parameters)},
                              ensure_ascii=False)
    example = f"\nFor example:\n<tool_call>\n{example_call}\n</tool_call>\n"
    tools = "\n".join(
        json.dumps({"name": s.name, "description": s.description, "parameters": s.parameters},
                   ensure_ascii=False)
        for s in specs
    )
    return _INSTRUCTIONS.format(format_hint=FORMAT_HINT, example=example, tools=tools)


def render_call(call: ToolCall) -> str:
    """A `ToolCall` as the `<tool_call>` block the model would have written."""
    try:
        arguments: object = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        arguments = call.arguments
    body = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def render_results(results: list[Message]) -> str:
    """Tool results as `<tool_response>` blocks, in call order."""
    return "\n".join(f'<tool_response name="{m.name or "tool"}">\n{m.content}\n</tool_response>'
                     for m in results)


@dataclass
class _ConversionCache:
    """Converted messages by the identity of their source (history messages are never mutated),
    so a turn re-renders only what is new."""

    items: dict[int, tuple[tuple[Message, ...], Message]] = field(default_factory=dict)
    system: tuple[Message, str, Message] | None = None

    used: dict[int, tuple[tuple[Message, ...], Message]] = field(default_factory=dict)

    def get(self, sources: tuple[Message, ...], build: Callable[[tuple[Message, ...]], Message]
            ) -> Message:
        key = id(sources[0])
        hit = self.items.get(key)
        if hit is None or len(hit[0]) != len(sources) or not all(
                a is b for a, b in zip(hit[0], sources, strict=True)):
            hit = (sources, build(sources))
        self.used[key] = hit
        return hit[1]

    def rotate(self) -> None:
        """Forget conversions the last request did not use (pruned or compacted history)."""
        self.items, self.used = self.used, {}


def to_prompt_messages(messages: list[Message], cache: _ConversionCache | None = None
                       ) -> list[Message]:
    """A sanitised history without native tool calls: assistant calls become `<tool_call>`
    text, each run of tool results one user message of `<tool_response>` blocks."""
    cache = cache or _ConversionCache()
    out: list[Message] = []
    i, n = 0, len(messages)
    while i < n:
        msg = messages[i]
        if msg.role == "assistant" and msg.tool_calls:
            out.append(cache.get((msg,), _assistant_as_text))
            i += 1
        elif msg.role == "tool":
            j = i
            while j < n and messages[j].role == "tool":
                j += 1
            out.append(cache.get(tuple(messages[i:j]), _results_as_user))
            i = j
        else:
            out.append(msg)
            i += 1
    cache.rotate()
    return sanitize(out)  # merges a results message with a following user note


def _results_as_user(results: tuple[Message, ...]) -> Message:
    return Message(role="user", content=render_results(list(results)))


def _assistant_as_text(sources: tuple[Message, ...]) -> Message:
    msg = sources[0]
    blocks = "\n".join(render_call(c) for c in msg.tool_calls)
    content = f"{msg.content}\n\n{blocks}" if msg.content.strip() else blocks
    return Message(role="assistant", content=content, reasoning=msg.reasoning)


# --- streaming: keep call markup out of text deltas -----------------------------------------------

_OPENERS = ("<tool_call>", "<|tool_call|>", "<function=", "[TOOL_CALLS]", "<|python_tag|>",
            "<|python_start|>")
_CLOSERS = {"<tool_call>": "</tool_call>", "<|tool_call|>": "<|/tool_call|>",
            "<function=": "</function>"}  # the others run to the end of the reply
_LONGEST_OPENER = max(len(o) for o in _OPENERS)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")


class MarkupFilter:
    """Wraps a text-delta listener and holds back call markup, including markers split across
    deltas. A reply that starts like a bare call (`{`, `[`, a JSON fence, `name(`) is held whole.
    `finish()` emits whatever of the final visible text was not sent yet."""

    def __init__(self, listener: DeltaListener) -> None:
        self.listener = listener
        self.buffer = ""
        self.mode: Literal["lead", "text", "markup", "hold", "done"] = "lead"
        self.close: str | None = None
        self.emitted: list[str] = []

    def __call__(self, delta: str) -> None:
        self.buffer += delta
        while self.buffer:
            if self.mode == "lead" and not self._decide_lead():
                return
            if self.mode in ("hold", "done"):
                return
            if self.mode == "markup" and not self._skip_markup():
                return
            if self.mode == "text" and not self._emit_text():
                return

    def finish(self, visible: str) -> None:
        """The reply is complete and `visible` is its text without markup: send the rest."""
        mode, self.mode = self.mode, "done"
        if mode == "done":
            return
        held = self.buffer.strip()
        if mode == "text":  # everything but a possible partial marker was sent
            if held and visible.rstrip().endswith(held):
                self._emit(self.buffer)
            return
        sent = "".join(self.emitted)  # lead / hold: nothing sent; markup: maybe not a call
        if visible.startswith(sent):
            rest = visible[len(sent):]
        else:
            k = _common_prefix(sent, visible)
            rest = visible[k:] if not sent[k:].strip() else ""
        self._emit(rest)

    def _emit(self, text: str) -> None:
        if text:
            self.emitted.append(text)
            self.listener(text)

    def _decide_lead(self) -> bool:
        head = self.buffer.lstrip()
        if not head:
            return False
        if head[0] in "{[":
            self.mode = "hold"
        elif head.startswith("```"):
            if "\n" not in head or not head.split("\n", 1)[1].strip():
                return False
            self.mode = "hold" if head.split("\n", 1)[1].lstrip()[0] in "{[" else "text"
        elif "```".startswith(head):
            return False
        else:
            word = _IDENTIFIER.match(head)
            if word and word.end() == len(head):
                return False  # "get_weather" may go on with "(": wait for the next character
            self.mode = "hold" if word and head[word.end()] == "(" else "text"
        return True

    def _emit_text(self) -> bool:
        hits = [(i, o) for o in _OPENERS if (i := self.buffer.find(o)) >= 0]
        if hits:
            index, opener = min(hits)
            self._emit(self.buffer[:index])
            self.buffer = self.buffer[index + len(opener):]
            self.mode, self.close = "markup", _CLOSERS.get(opener)
            return True
        keep = _partial_opener_length(self.buffer)
        self._emit(self.buffer[:len(self.buffer) - keep])
        self.buffer = self.buffer[len(self.buffer) - keep:]
        return False

    def _skip_markup(self) -> bool:
        if self.close is None:
            self.buffer = ""
            return False
        index = self.buffer.find(self.close)
        if index < 0:
            self.buffer = self.buffer[-(len(self.close) - 1):]
            return False
        self.buffer = self.buffer[index + len(self.close):]
        self.mode = "text"
        return True


def _partial_opener_length(text: str) -> int:
    """Length of the longest end of `text` that could be the start of a marker."""
    tail = text[-(_LONGEST_OPENER - 1):]
    if "<" not in tail and "[" not in tail:  # the common case, per streamed token
        return 0
    for length in range(min(len(text), _LONGEST_OPENER - 1), 0, -1):
        tail = text[-length:]
        if any(o.startswith(tail) for o in _OPENERS):
            return length
    return 0


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


# --- the plugin ---------------------------------------------------------------------------------


@dataclass
class _RunTextState:
    filter: MarkupFilter | None = None
    malformed: list[MalformedCall] = field(default_factory=list)
    pending_note: str | None = None
    corrections: int = 0
    cache: _ConversionCache = field(default_factory=_ConversionCache)


class ToolTextPlugin(LoopPlugin):
    """Reads tool calls written as text. `mode="prompt"`: prompt-based tool calling (no native
    schemas sent; markup may name any tool and unreadable markup is reported to the model).
    `mode="native"`: the fallback for servers that answer native tools with text calls (only
    calls to known tools count; anything else stays text)."""

    def __init__(self, *, mode: Literal["prompt", "native"],
                 known_names: Callable[[], Collection[str]]) -> None:
        self.mode = mode
        self.known_names = known_names
        self._key = f"_tool_text_{id(self)}"

    def _state(self, run: RunState) -> _RunTextState:
        state = run.tool_state.get(self._key)
        if not isinstance(state, _RunTextState):
            state = run.tool_state[self._key] = _RunTextState()
        return state

    async def before_model(self, run: RunState, request: ModelRequest) -> None:
        state = self._state(run)
        if self.mode == "prompt":
            specs, request.tools, request.tool_choice = request.tools, [], None
            request.messages = to_prompt_messages(request.messages, state.cache)
            _add_tool_section(request, specs, state.cache)
        if state.pending_note:
            request.messages.append(Message(role="user", content=state.pending_note))
            request.messages = sanitize(request.messages)
            state.pending_note = None

    def text_filter(self, run: RunState, listener: DeltaListener) -> DeltaListener:
        state = self._state(run)
        state.filter = MarkupFilter(listener)
        return state.filter

    async def after_model(self, run: RunState, response: ModelResponse) -> None:
        state = self._state(run)
        state.malformed = []
        message = response.message
        if not message.tool_calls and message.content:
            self._read_calls(run, state, response)
        if state.filter is not None:
            state.filter.finish(response.message.content)
            state.filter = None

    def _read_calls(self, run: RunState, state: _RunTextState, response: ModelResponse) -> None:
        message = response.message
        found = parse_tool_calls(message.content, self.known_names(),
                                 trust_markup=self.mode == "prompt")
        state.malformed = found.malformed
        if not found.calls and not found.malformed:
            return
        calls = [ToolCall(id=f"call_{uuid.uuid4().hex[:20]}", name=c.name, arguments=c.arguments)
                 for c in found.calls]
        correcting = not calls and state.corrections < MAX_FORMAT_CORRECTIONS
        # a reply of unreadable markup only keeps its text: the correction refers to it, and an
        # empty assistant message is invalid for some providers
        content = message.content if not calls and (correcting or not found.text) else found.text
        response.message = Message(role="assistant", content=content, tool_calls=calls,
                                   reasoning=message.reasoning,
                                   provider_data=message.provider_data)
        if calls:
            state.corrections = 0
            if response.finish_reason != "length":
                response.finish_reason = "tool_calls"
            if found.malformed:
                state.pending_note = format_correction(found.malformed)
            run.status("text_tool_calls", f"read {len(calls)} tool call(s) from the reply text",
                       {"count": len(calls), "styles": sorted({c.style for c in found.calls})})

    async def on_answer(self, run: RunState, answer: str) -> str | None:
        state = self._state(run)
        if not state.malformed or state.corrections >= MAX_FORMAT_CORRECTIONS:
            return None
        state.corrections += 1
        malformed, state.malformed = state.malformed, []
        run.status("tool_call_format", "the reply held unreadable tool-call markup; asking the "
                   "model to correct it", {"problems": [m.problem for m in malformed]})
        return format_correction(malformed)


def format_correction(malformed: list[MalformedCall]) -> str:
    """What the model reads after writing call markup that could not be read."""
    problems = "; ".join(m.problem for m in malformed[:3])
    return (
        f"Your tool call could not be read ({problems}), so it was not run. Write each call "
        f"exactly like this, with the arguments as one valid JSON object (double quotes, no "
        f"trailing commas, no comments), one block per call:\n{FORMAT_HINT}\n"
        "If you do not need a tool, answer without <tool_call> blocks."
    )


def _add_tool_section(request: ModelRequest, specs: list[ToolSpec],
                      cache: _ConversionCache) -> None:
    section = render_tool_prompt(specs)
    if not section:
        return
    messages = request.messages
    if messages and messages[0].role == "system":
        source = messages[0]
        hit = cache.system
        if hit is not None and hit[0] is source and hit[1] == section:
            messages[0] = hit[2]
            return
        converted = Message(role="system", content=f"{source.content}\n\n{section}")
        cache.system = (source, section, converted)
        messages[0] = converted
    else:
        messages.insert(0, Message(role="system", content=section))


def tool_call_plugins(settings: Settings, catalogue: RunCatalogue) -> list[LoopPlugin]:
    """The plugins one run needs for `tool_call_format`, `text_tool_calls` and
    `narration_nudge`. The prompt-mode plugin must stay last among request editors: it converts
    whatever the others added."""
    from loopwright.errors import ConfigError
    from loopwright.tools.nudge import NarrationNudge

    fmt = settings.tool_call_format
    if fmt not in ("native", "prompt"):
        raise ConfigError(f"tool_call_format must be 'native' or 'prompt', not {fmt!r}")
    plugins: list[LoopPlugin] = []
    if len(catalogue.registry) == 0:
        return plugins
    if settings.narration_nudge:
        plugins.append(NarrationNudge(prompt_mode=fmt == "prompt",
                                      has_tools=lambda: len(catalogue.registry) > 0))
    if fmt == "prompt" or settings.text_tool_calls:
        plugins.append(ToolTextPlugin(mode="prompt" if fmt == "prompt" else "native",
                                      known_names=catalogue.callable_names))
    return plugins
