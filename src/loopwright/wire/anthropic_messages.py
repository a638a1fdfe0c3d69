"""Anthropic Messages (`/v1/messages`): JSON shapes, prompt-cache breakpoints, thinking blocks.

Conventions this adapter settles:

- The system prompt goes in the top-level `system` field, split at `CACHE_BOUNDARY`: the static
  prefix block carries a cache breakpoint, the per-run tail does not.
- Tool results travel as `tool_result` blocks in a user turn; consecutive results and any user text
  that follows them (an ephemeral note, a steering message) share one user turn, results first.
- `thinking` / `redacted_thinking` blocks are stored verbatim in
  `Message.provider_data["anthropic_messages"]["content"]` (with the text and tool-use blocks as
  position markers) and sent back unchanged on later turns — unless the message's tool calls no
  longer match them, in which case they are stale and dropped.
- Usage: Anthropic's `input_tokens` counts only the uncached part of the prompt. Ours counts the
  whole prompt (`input_tokens + cache_read_input_tokens + cache_creation_input_tokens`), as every
  other API mode does, so cost math is one formula; the cached parts are also reported separately
  in `cache_read_tokens` / `cache_write_tokens`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from loopwright.arguments import ArgumentsError, loads_bounded, parse_arguments
from loopwright.attachments import Attachment, refuse_unsupported
from loopwright.errors import ConfigError
from loopwright.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from loopwright.profiles import Profile
from loopwright.wire import splice
from loopwright.wire.anthropic_replies import (
    MODE,
    REASONING_BLOCKS,
    STOP_REASONS,
    AnthropicStreamParser,
    kept_blocks,
    stored_block,
    usage_from_wire,
)
from loopwright.wire.base import split_system
from loopwright.wire.stream import PlainCall, whole_reply

JSON_KEY = f"{MODE}/json"  # Message.wire_cache key of the message's blocks as JSON text
JOINED_KEY = f"{MODE}/joined"  # … of the joined JSON of the turns up to it (splice.Joined)
_MARKED = f"{MODE}/marked"  # the tools' wire form with a cache breakpoint (splice.encoded_tools)

# Anthropic requires max_tokens; this is the default answer allowance (less when the window
# leaves less: `ModelRequest.output_room`).
DEFAULT_MAX_TOKENS = 8192
# What is left for the visible answer on top of a thinking budget when max_tokens is not set.
ANSWER_ALLOWANCE = 4096
THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}
MIN_THINKING_BUDGET = 1024  # the API rejects less
_NO_THINKING = frozenset({"none", "off", "disabled"})
MAX_CACHE_BREAKPOINTS = 4  # the API rejects more
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
# Sent when the history would otherwise open with an assistant turn, which the API rejects.
OPENING_PLACEHOLDER = "(continuing the conversation)"
# Anthropic's pattern for tool-use ids; ids minted by other servers ("functions.add:0") may not fit
_ID_OK = re.compile(r"^[a-zA-Z0-9_-]+$")
_ID_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def wire_id(call_id: str | None) -> str:
    """A tool-use id the API accepts (the same input always maps to the same id)."""
    if call_id and _ID_OK.match(call_id):
        return call_id
    return _ID_BAD_CHARS.sub("_", call_id or "") or "call"


# --- internal → wire --------------------------------------------------------------------------


def message_to_blocks(msg: Message) -> list[dict[str, Any]]:
    """The content blocks of one message (cached on the message; callers must not mutate it)."""
    cached = msg.wire_cache.get(MODE)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    blocks: list[dict[str, Any]]
    if msg.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": wire_id(msg.tool_call_id)}
        if msg.attachments:
            text = [{"type": "text", "text": msg.content}] if msg.content else []
            result["content"] = [*text, *attachment_blocks(msg.attachments)]
        elif msg.content:
            result["content"] = msg.content
        if msg.is_error:
            result["is_error"] = True
        blocks = [result]
    elif msg.role == "assistant":
        blocks = _assistant_blocks(msg)
    else:  # user, or a late system note (sanitize turns those into user messages anyway)
        blocks = [{"type": "text", "text": msg.content}] if msg.content else []
        blocks += attachment_blocks(msg.attachments)
    msg.wire_cache[MODE] = blocks
    return blocks


def attachment_blocks(attachments: list[Attachment]) -> list[dict[str, Any]]:
    """Anthropic `image` and `document` blocks (base64, or a URL for remote images)."""
    return [{"type": a.kind,
             "source": {"type": "url", "url": a.url} if a.url else
             {"type": "base64", "media_type": a.media_type, "data": a.base64()}}
            for a in attachments]


def _assistant_blocks(msg: Message) -> list[dict[str, Any]]:
    calls = {c.id: _tool_use_block(c) for c in msg.tool_calls}
    stored = (msg.provider_data.get(MODE) or {}).get("content")
    if stored and _same_calls(stored, msg.tool_calls):
        if _stored_text(stored) == msg.content:
            # as received: the thinking signatures cover this exact sequence
            return [calls[b["id"]] if b["type"] == "tool_use" else b for b in stored]
        # the text was edited after the fact; the reasoning still belongs to these calls
        thinking = [b for b in stored if b["type"] in REASONING_BLOCKS]
        return [*thinking, *_text_block(msg.content), *calls.values()]
    # no provider blocks, or blocks for other calls (stale): rebuild from the message alone
    return [*_text_block(msg.content), *calls.values()]


def _text_block(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if text else []  # the API rejects empty text blocks


def _tool_use_block(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": wire_id(call.id), "name": call.name,
            "input": _input_object(call)}


def _input_object(call: ToolCall) -> dict[str, Any]:
    """`input` must be an object; arguments the model broke are repaired, else sent empty."""
    try:
        value = loads_bounded(call.arguments or "{}")
    except ValueError:
        try:
            return parse_arguments(call.arguments).value
        except ArgumentsError:
            return {}
    return value if isinstance(value, dict) else {}


def _same_calls(stored: list[dict[str, Any]], calls: list[ToolCall]) -> bool:
    ids = [(b.get("id"), b.get("name")) for b in stored if b["type"] == "tool_use"]
    return ids == [(c.id, c.name) for c in calls]


def _stored_text(stored: list[dict[str, Any]]) -> str:
    return "".join(b["text"] for b in stored if b["type"] == "text")


def system_blocks(msg: Message) -> list[dict[str, Any]]:
    """The `system` field: the static prefix (with a cache breakpoint), then the per-run part."""
    cached = msg.wire_cache.get(MODE)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    static, per_run = split_system(msg.content)
    blocks: list[dict[str, Any]] = []
    if static.strip():
        blocks.append({"type": "text", "text": static, "cache_control": EPHEMERAL})
    if per_run.strip():
        blocks.append({"type": "text", "text": per_run})
    msg.wire_cache[MODE] = blocks
    return blocks


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


@dataclass(slots=True)
class Turn:
    """One turn of the wire conversation: its role, the messages whose blocks it carries (none:
    the opening placeholder) and the index in the request just after its last message."""

    role: str
    held: list[Message]
    end: int


def conversation_to_wire(messages: list[Message]) -> tuple[list[dict[str, Any]], list[Turn]]:
    """(system blocks, turns) with roles alternating and the first turn a user turn."""
    system = _system_part(messages)
    turns = _group(messages, system.count)
    if not turns or turns[0].role != "user":
        turns.insert(0, Turn("user", [], system.count))
    return system.blocks, turns


class _System:
    """The leading system messages of a request: how many, their blocks, the cache breakpoints
    the turns and tools may still take after theirs, and the blocks' JSON (no brackets)."""

    __slots__ = ("blocks", "count", "left", "text")

    def __init__(self, leading: list[Message]) -> None:
        self.count = len(leading)
        self.blocks = [block for m in leading for block in system_blocks(m)]
        self.left = _breakpoints_left(self.blocks)
        self.text = ",".join([p for m in leading
                              if (p := splice.cached_piece(m, JSON_KEY, system_blocks))])


_SYSTEM_KEY = f"{MODE}/system"  # a lone leading system message's `_System`


def _system_part(messages: list[Message]) -> _System:
    """Every turn asks: for the usual request, one system message then the conversation, the
    answer is kept on that message (its cache empties when it is edited)."""
    if len(messages) > 1 and messages[0].role == "system" and messages[1].role != "system":
        kept: _System | None = messages[0].wire_cache.get(_SYSTEM_KEY)
        if kept is None:
            kept = messages[0].wire_cache[_SYSTEM_KEY] = _System(messages[:1])
        return kept
    start = 0
    while start < len(messages) and messages[start].role == "system":
        start += 1
    return _System(messages[:start])


def _group(messages: list[Message], start: int) -> list[Turn]:
    turns: list[Turn] = []
    last: Turn | None = None
    for i in range(start, len(messages)):
        msg = messages[i]
        # the cached blocks read here (a call only for a message not seen yet): every turn
        # groups the messages after the joined text
        if not (msg.wire_cache.get(MODE) or message_to_blocks(msg)):
            continue  # an empty message would be rejected; its neighbours merge instead
        role = "assistant" if msg.role == "assistant" else "user"
        if last is not None and last.role == role:
            last.held.append(msg)
            last.end = i + 1
        else:
            last = Turn(role, [msg], i + 1)
            turns.append(last)
    return turns


def turn_object(turn: Turn) -> dict[str, Any]:
    if not turn.held:
        return {"role": "user", "content": [{"type": "text", "text": OPENING_PLACEHOLDER}]}
    return {"role": turn.role, "content": [b for m in turn.held for b in message_to_blocks(m)]}


def _turn_json(turn: Turn) -> str:
    if not turn.held:
        return splice.dumps(turn_object(turn))
    return f'{{"role":"{turn.role}","content":[{_blocks_json(turn.held)}]}}'


def _blocks_json(held: list[Message]) -> str:
    """The JSON of the blocks of `held` (no brackets), from each message's cached JSON."""
    if len(held) == 1:  # most turns: a reply, or one result (no list to build and join)
        return splice.cached_piece(held[0], JSON_KEY, message_to_blocks)
    return ",".join([splice.cached_piece(m, JSON_KEY, message_to_blocks) for m in held])


def _split_turns(messages: list[Message]) -> tuple[_System, str, list[Turn]]:
    """(the system part, the JSON of every turn but the last two, the last two turns).

    The JSON of the earlier turns is joined onto the text kept from the previous turn of the run
    (`splice.Joined`, ending on a turn boundary) when that is still true, and kept again."""
    system = _system_part(messages)
    entry = splice.find_joined(messages, JOINED_KEY)
    turns = _group(messages, entry.count) if entry is not None else []
    if entry is None or len(turns) < 2 or turns[0].role == entry.extra:
        entry = None  # none kept, or the new turns would merge into the kept ones: start over
        turns = conversation_to_wire(messages)[1]
    head, tail = turns[:-2], turns[-2:]
    text = entry.text if entry is not None else ""
    if head:
        turns_json = ",".join(map(_turn_json, head))  # never empty: each has its role
        text = f"{text},{turns_json}" if text else turns_json
        splice.remember_joined(messages, head[-1].end, text, JOINED_KEY, entry, head[-1].role)
    return system, text, tail


def _breakpoints_left(system: list[dict[str, Any]]) -> int:
    """How many cache breakpoints the turns and tools may still take, after the system's."""
    return MAX_CACHE_BREAKPOINTS - sum(1 for b in system if "cache_control" in b)


def add_cache_breakpoints(system: list[dict[str, Any]], turns: list[dict[str, Any]]) -> bool:
    """Mark the last one or two turns, within the API's limit of four breakpoints; True when one
    is left for the last tool (`tools_to_wire(..., marked=True)`).

    The static system block already carries one (see `system_blocks`). Marked blocks are copied,
    never changed in place: the unmarked originals live in the per-message wire cache.
    """
    budget = _breakpoints_left(system)
    for turn in reversed(turns[-2:]):
        if budget > 0 and _mark_last_block(turn["content"]):
            budget -= 1
    return budget > 0


def _marked_tail(system: list[dict[str, Any]], last_two: list[Turn]
                 ) -> tuple[list[dict[str, Any]], bool]:
    """The last two turns as objects with their breakpoints, and whether one is left for the
    last tool (`add_cache_breakpoints`)."""
    tail = [turn_object(t) for t in last_two]
    return tail, add_cache_breakpoints(system, tail)


# a breakpoint written into the JSON text of a block (`{**block, "cache_control": EPHEMERAL}`
# serialised: the key after the block's own)
_MARK_JSON = ',"cache_control":' + splice.dumps(EPHEMERAL) + "}"


def _marked_tail_json(budget: int, last_two: list[Turn]) -> tuple[str | None, bool]:
    """`_marked_tail` as JSON text joined from each message's cached JSON, the breakpoint
    written into the text of each turn's last block (`budget`: the breakpoints left after the
    system's): the same text, without building the turns' objects and serialising them again
    every turn. (None, False) when a turn is the opening placeholder or its last block does
    not take the breakpoint as it stands (a reasoning block, one already marked): those turns
    go the object way."""
    texts: list[str] = []
    for turn in reversed(last_two):
        if not turn.held:
            return None, False
        last = message_to_blocks(turn.held[-1])[-1]
        if last["type"] in REASONING_BLOCKS or "cache_control" in last:
            return None, False
        blocks = _blocks_json(turn.held)  # ends with the last block's "}"
        if budget > 0:
            blocks = blocks[:-1] + _MARK_JSON
            budget -= 1
        texts.append(f'{{"role":"{turn.role}","content":[{blocks}]}}')
    texts.reverse()
    return ",".join(texts), budget > 0


def tools_to_wire(specs: list[ToolSpec], *, marked: bool = False) -> list[dict[str, Any]]:
    """The `tools` field; `marked`: the last tool carries a cache breakpoint."""
    tools = [tool_to_wire(spec) for spec in specs]
    if marked and tools:
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
    return tools


def _marked_tools(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    return tools_to_wire(specs, marked=True)


def _mark_last_block(content: list[dict[str, Any]]) -> bool:
    for n in range(len(content) - 1, -1, -1):
        block = content[n]
        if block["type"] in REASONING_BLOCKS:
            continue  # thinking blocks cannot carry cache_control
        content[n] = {**block, "cache_control": EPHEMERAL}
        return True
    return False


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice in ("required", "any"):
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def thinking_budget(effort: str | None) -> int | None:
    """Thinking tokens for a `reasoning_effort`, or None for no extended thinking."""
    if not effort or effort.lower() in _NO_THINKING:
        return None
    budget = THINKING_BUDGETS.get(effort.lower())
    if budget is None:
        raise ConfigError(f"reasoning_effort {effort!r} is not supported for Anthropic: use "
                          "'low', 'medium' or 'high' (or 'none')")
    return budget


def fitted_thinking(budget: int, max_tokens: int | None, room: int | None
                    ) -> tuple[int | None, int]:
    """The thinking budget (None: no thinking) and `max_tokens` when the reply's allowance does
    not hold the budget: the budget plus room to answer — the `max_tokens` the user set (fitted
    to the window already: `ModelCalls`), or else a share of what the window leaves (`room`).
    Within `room` both: a smaller budget on a small window, none when less than the API's
    minimum would be left (the answer's allowance alone is sent then)."""
    answer = max_tokens or ANSWER_ALLOWANCE
    if room is None or budget + answer <= room:
        return budget, budget + answer
    if not max_tokens:
        answer = min(answer, room // 2)
    fitted = room - answer
    if fitted >= MIN_THINKING_BUDGET:
        return fitted, room
    return None, (max_tokens or room)


def thinking_fits(turns: list[dict[str, Any]]) -> bool:
    """Whether thinking may be enabled for this conversation.

    With thinking on, the API demands that an assistant turn answered by tool results starts with
    a thinking block. A tool round made without thinking (by another provider before a fallback,
    or with thinking off) has none, so thinking stays off until that round is over.
    """
    if len(turns) < 2 or turns[-2]["role"] != "assistant":
        return True
    if not any(b["type"] == "tool_result" for b in turns[-1]["content"]):
        return True
    return bool(turns[-2]["content"][0]["type"] in REASONING_BLOCKS)


# --- the format (replies are read in `anthropic_replies`) ---------------------------------------


class AnthropicMessagesFormat(splice.SplicedBodyFormat):
    """JSON shapes of `/messages`."""

    mode = MODE
    path = "/messages"

    def _body(self, request: ModelRequest, stream: bool, profile: Profile) -> dict[str, Any]:
        history = request.messages
        system, head_json, last_two = _split_turns(history)
        refuse_unsupported(profile.supports_images, request.model, request.messages)
        # only the last two turns carry breakpoints: joined from each message's cached JSON
        # with the breakpoint written into their last block, or else built as objects; the
        # turns before them are joined from each message's cached JSON
        tail_json, mark_tool = _marked_tail_json(system.left, last_two)
        if tail_json is None:
            tail, mark_tool = _marked_tail(system.blocks, last_two)
            tail_json = ",".join(map(splice.dumps, tail))
        messages_json = (f"{head_json},{tail_json}" if head_json and tail_json
                         else head_json or tail_json)
        body: dict[str, Any] = {"model": request.model, "messages": splice.Spliced(
            lambda: messages_json,
            lambda: [*map(turn_object, conversation_to_wire(history)[1][:-2]),
                     *_marked_tail(system.blocks, last_two)[0]])}
        if system.blocks:  # the system prompt's JSON too is written once, on its message
            body["system"] = splice.Spliced(lambda: system.text, lambda: list(system.blocks))
        if request.tools:  # the same every turn: their JSON is written once
            body["tools"] = (splice.encoded_tools(_MARKED, request.tools, _marked_tools)
                             if mark_tool else
                             splice.encoded_tools(MODE, request.tools, tools_to_wire))
            if request.tool_choice:
                body["tool_choice"] = _tool_choice(request.tool_choice)
            if not profile.parallel_tool_calls and request.tool_choice != "none":
                choice = body.setdefault("tool_choice", {"type": "auto"})
                choice["disable_parallel_tool_use"] = True
        budget = thinking_budget(request.reasoning_effort)
        if budget is not None and not thinking_fits([turn_object(t) for t in last_two]):
            budget = None
        max_tokens = request.max_tokens or min(DEFAULT_MAX_TOKENS,
                                               request.output_room or DEFAULT_MAX_TOKENS)
        if budget is not None and max_tokens <= budget:  # the budget is part of max_tokens
            budget, max_tokens = fitted_thinking(budget, request.max_tokens, request.output_room)
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        elif request.temperature is not None and profile.supports_temperature:
            body["temperature"] = request.temperature  # not allowed together with thinking
        body["max_tokens"] = max_tokens
        if stream:
            body["stream"] = True
        if request.extra_body:
            body.update(request.extra_body)
        return body

    def parse_body(self, body: dict[str, Any]) -> ModelResponse:
        blocks = body.get("content") or ()
        parts: list[tuple[bool, str]] = []  # (is it reasoning, its text), in order
        calls: list[PlainCall] = []
        reasoning = False
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                parts.append((False, block.get("text") or ""))
            elif kind == "thinking":
                parts.append((True, block.get("thinking") or ""))
                reasoning = True
            elif kind == "tool_use":
                value = block.get("input")
                calls.append((block.get("id"), block.get("name"),
                              value if isinstance(value, str)
                              else splice.dumps_as_json_dumps(value or {})))
            elif kind == "redacted_thinking":
                reasoning = True
        # the block sequence is kept only to send reasoning back verbatim
        kept = (kept_blocks([s for b in blocks if (s := stored_block(b)) is not None]) if reasoning
                else None)
        return whole_reply(parts, calls,
                           finish_reason=STOP_REASONS.get(body.get("stop_reason") or ""),
                           usage=usage_from_wire(body.get("usage")),
                           model=body.get("model") or "", provider_data=kept)

    def stream_parser(self) -> AnthropicStreamParser:
        return AnthropicStreamParser()
