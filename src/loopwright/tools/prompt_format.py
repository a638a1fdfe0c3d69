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

import asyncio
import dataclasses
import functools
import itertools
import json
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from loopwright import notes
from loopwright.arguments import loads_bounded
from loopwright.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec, sanitize
from loopwright.plugins import LoopPlugin
from loopwright.tools.examples import example_call
from loopwright.wire.base import CACHE_BOUNDARY, split_system
from loopwright.wire.stream import DeltaListener
from loopwright.wire.text_calls import (
    FORMAT_HINT,
    MarkupFilter,
    coerce_arguments,
    parse_tool_calls,
)
from loopwright.wire.text_calls.runtime_markup import is_runtime_block, strip_runtime_markup

if TYPE_CHECKING:
    from loopwright.plugins import RunView
    from loopwright.settings import Settings
    from loopwright.tools.catalogue import RunCatalogue

_PARSE_INLINE = 32_768  # characters of reply text parsed on the event loop thread
MAX_FORMAT_CORRECTIONS = 2  # replies of only unreadable markup sent back per run (review)

# The result tag is not named here: told "never write <tool_response> yourself", the real 1.5B
# answered a six-read chain with a made-up <tool_response> block and no call (bench/chain_reads.py)
_INSTRUCTIONS = """\
# Tools

This conversation has no built-in tool calling: you call a tool by writing a <tool_call> block \
in your reply, and its result comes back to you in the next message.

To call a tool, write its name and its arguments as one JSON object (double quotes, no comments, \
no trailing commas) inside <tool_call></tool_call> tags:
{format_hint}
Write one block per call; independent calls may go in one reply. After your calls, end your \
reply and wait for the results. When you need no tool, answer normally, without <tool_call> \
blocks.
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
    call = example_call(first.name, first.parameters)
    example = f"\nFor example:\n<tool_call>\n{call}\n</tool_call>\n"
    tools = "\n".join(
        json.dumps({"name": s.name, "description": s.description, "parameters": s.parameters},
                   ensure_ascii=False)
        for s in specs
    )
    return _INSTRUCTIONS.format(format_hint=FORMAT_HINT, example=example, tools=tools)


def render_call(call: ToolCall) -> str:
    """A `ToolCall` as the `<tool_call>` block the model would have written."""
    try:
        arguments: object = loads_bounded(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        arguments = call.arguments
    body = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def render_results(results: list[Message]) -> str:
    """Tool results as `<tool_response>` blocks, in call order, as Hermes-style chat templates
    (Qwen's among them) write them: with a `name` attribute the real 1.5B answered a chain of
    reads with the line number of the first file's one line (bench/chain_reads.py)."""
    return "\n".join(f"<tool_response>\n{m.content}\n</tool_response>" for m in results)


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
    # merges a results message with a following user note; two user turns already in a row
    # were kept apart on purpose (see `RunState.request_history`) and stay so
    apart = {id(m) for prev, m in itertools.pairwise(messages)
             if prev.role == m.role == "user"}
    return sanitize(out, apart=apart)


def _results_as_user(results: tuple[Message, ...]) -> Message:
    return Message(role="user", content=render_results(list(results)))


def _assistant_as_text(sources: tuple[Message, ...]) -> Message:
    msg = sources[0]
    blocks = "\n".join(render_call(c) for c in msg.tool_calls)
    content = f"{msg.content}\n\n{blocks}" if msg.content.strip() else blocks
    return Message(role="assistant", content=content, reasoning=msg.reasoning)


# --- the plugin ---------------------------------------------------------------------------------


@dataclass
class _RunTextState:
    filter: MarkupFilter | None = None
    visible: str | None = None  # the reply's text without call markup, once read
    pending_note: str | None = None
    corrections: int = 0  # replies of only unreadable markup reported in this run (review's
    # `call_format` check sends them back, as often): such a reply keeps its text
    cache: _ConversionCache = field(default_factory=_ConversionCache)


class ToolTextPlugin(LoopPlugin):
    """Reads tool calls written as text. `mode="prompt"`: prompt-based tool calling (no native
    schemas sent; markup may name any tool and unreadable markup is reported to the model).
    `mode="native"`: the fallback for servers that answer native tools with text calls (only
    calls to known tools count; anything else stays text)."""

    def __init__(self, *, mode: Literal["prompt", "native"],
                 known_names: Callable[[], Collection[str]],
                 schema_of: Callable[[str], dict[str, Any] | None] | None = None,
                 reads: Callable[[], bool] = lambda: True) -> None:
        self.mode = mode
        self.known_names = known_names
        self.schema_of = schema_of
        # whether the model answering now has its text read (a chain's fallback may be a
        # frontier model after a small local one, or the other way round)
        self.reads = reads
        self.run_state = _RunTextState()  # this run's (a run gets its own object)

    def for_run(self, run: RunView) -> LoopPlugin:
        return ToolTextPlugin(mode=self.mode, known_names=self.known_names,
                              schema_of=self.schema_of, reads=self.reads)

    def _state(self, run: RunView) -> _RunTextState:
        return self.run_state

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        state = self._state(run)
        if self.mode == "prompt":
            answer_only = request.tool_choice == "none"
            specs, request.tools, request.tool_choice = request.tools, [], None
            request.messages = to_prompt_messages(request.messages, state.cache)
            if not answer_only:  # a small model offered the format keeps writing calls
                _add_tool_section(request, specs, state.cache)
        if state.pending_note:
            request.messages.append(Message(role="user", content=state.pending_note))
            request.messages = sanitize(request.messages)
            state.pending_note = None

    def text_filter(self, run: RunView, listener: DeltaListener) -> DeltaListener:
        if not self.reads():
            return listener
        state = self._state(run)
        state.filter = MarkupFilter(listener, is_call=self._is_call, known=self.known_names)
        return state.filter

    def _is_call(self, region: str) -> bool:
        if is_runtime_block(region):  # imitated runtime markup is held back like a call
            return True
        found = parse_tool_calls(region, self.known_names(), trust_markup=self.mode == "prompt")
        return bool(found.calls or (found.malformed and self.mode == "prompt"))

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        state = self._state(run)
        state.visible = None
        if self.reads():
            message = response.message
            if not message.tool_calls and message.content:
                await self._read_calls(run, state, response)
            self._drop_runtime_markup(run, state, response)
        if state.filter is not None:
            shown = response.message.content if state.visible is None else state.visible
            state.filter.finish(shown)
            state.filter = None

    def _drop_runtime_markup(self, run: RunView, state: _RunTextState,
                             response: ModelResponse) -> None:
        message = response.message
        clean = strip_runtime_markup(message.content)
        if clean == message.content:
            return
        run.status("runtime_markup", "removed the runtime's own markup (<tool_response>, "
                   "<system-reminder>) that the model imitated in its reply", {})
        state.visible = clean
        if clean or message.tool_calls:  # a reply of nothing else keeps its text for the retry
            response.message = dataclasses.replace(message, content=clean)

    async def _read_calls(self, run: RunView, state: _RunTextState, response: ModelResponse
                          ) -> None:
        message = response.message
        parse = functools.partial(parse_tool_calls, message.content, self.known_names(),
                                  trust_markup=self.mode == "prompt")
        # a long reply is parsed off the event loop: repairing broken JSON in it is CPU work
        found = await asyncio.to_thread(parse) if len(message.content) > _PARSE_INLINE else parse()
        state.visible = found.text
        if not found.calls and not found.malformed:
            if found.reasoning or "<|message|>" in message.content:  # harmony answer, no call
                response.message = Message(
                    role="assistant", content=found.text, provider_data=message.provider_data,
                    reasoning="\n\n".join(r for r in (message.reasoning, found.reasoning) if r)
                    or None)
            return
        calls = [ToolCall(id=f"call_{uuid.uuid4().hex[:20]}", name=c.name,
                          arguments=self._typed_arguments(c.name, c.arguments, c.style))
                 for c in found.calls]
        correcting = not calls and state.corrections < MAX_FORMAT_CORRECTIONS
        if correcting:  # the review stage's `call_format` check sends it back
            state.corrections += 1
            response.unreadable_calls = [m.problem for m in found.malformed]
        # a reply of unreadable markup only keeps its text: the correction refers to it, and an
        # empty assistant message is invalid for some providers
        content = message.content if not calls and (correcting or not found.text) else found.text
        reasoning = "\n\n".join(r for r in (message.reasoning, found.reasoning) if r) or None
        response.message = Message(role="assistant", content=content, tool_calls=calls,
                                   reasoning=reasoning, provider_data=message.provider_data)
        if calls:
            if response.finish_reason != "length":
                response.finish_reason = "tool_calls"
            if found.malformed:
                state.pending_note = format_correction([m.problem for m in found.malformed])
            run.status("text_tool_calls", f"read {len(calls)} tool call(s) from the reply text",
                       {"count": len(calls), "styles": sorted({c.style for c in found.calls})})

    def _typed_arguments(self, name: str, arguments: str, style: str) -> str:
        """XML-style values are text as written; give them the types of the tool's schema."""
        if style != "xml" or self.schema_of is None:
            return arguments
        try:
            values = loads_bounded(arguments)
        except ValueError:
            return arguments
        if not isinstance(values, dict):
            return arguments
        return json.dumps(coerce_arguments(values, self.schema_of(name)), ensure_ascii=False)


def format_correction(problems: Sequence[str]) -> str:
    """What the model reads after writing call markup that could not be read."""
    return notes.render(notes.FORMAT_CORRECTION, problems="; ".join(problems[:3]),
                        hint=FORMAT_HINT)


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
        # before the per-run part (working directory, date): the prefix a local server caches
        # stays the same across directories
        static, volatile = split_system(source.content)
        converted = Message(role="system", content=f"{static}\n\n{section}"
                            + (f"{CACHE_BOUNDARY}{volatile}" if volatile else ""))
        cache.system = (source, section, converted)
        messages[0] = converted
    else:
        messages.insert(0, Message(role="system", content=section))


def tool_call_plugins(settings: Settings, catalogue: RunCatalogue, *,
                      read_text_calls: Callable[[], bool] | None) -> list[LoopPlugin]:
    """The plugin one run needs for `tool_call_format` and text-written calls (`read_text_calls`:
    whether the model answering now has its text read, `review.plan.text_call_reader`; None
    for none of the chain's models). It must stay last among request editors: it converts
    whatever the others added."""
    fmt = settings.tool_call_format  # validated by `Settings`
    if len(catalogue.registry) == 0 and not settings.mcp_servers:  # MCP tools come at run start
        return []
    if read_text_calls is None:
        return []
    return [ToolTextPlugin(mode="prompt" if fmt == "prompt" else "native",
                           known_names=catalogue.callable_names,
                           schema_of=lambda name: _schema(catalogue, name),
                           reads=read_text_calls)]


def _schema(catalogue: RunCatalogue, name: str) -> dict[str, Any] | None:
    found = catalogue.resolve(name)
    return found.parameters if found is not None else None
