"""The one vendor-neutral message model, and the history rules enforced before every call.

Every wire adapter converts to and from these types; nothing else knows a wire format.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, Literal

from loopwright.arguments import (
    OFF_LOOP_CHARS,
    canonical_arguments,
    is_json_object,
    storable_arguments,
)
from loopwright.attachments import Attachment

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["tool_calls", "end_turn", "length", "content_filter"]


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolCall:
    """A call the model asked for. `arguments` is the raw JSON text as the model produced it.

    Frozen: the wire forms cached on its message (see `Message.wire_cache`) must not go stale;
    a changed call is a new `ToolCall`.
    """

    id: str
    name: str
    arguments: str = "{}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


def call_signature(call: ToolCall) -> str:
    """The tool and its arguments, the same however the JSON was spaced or ordered: what makes
    two calls one (the review's copy and doom-loop checks, idempotency keys)."""
    return f"{call.name}\0{canonical_arguments(call.arguments)}"


@dataclass(kw_only=True, slots=True, init=False)
class Message:
    """One entry of a conversation.

    `provider_data` keeps wire-specific blocks that must be sent back unchanged on later turns
    (Anthropic thinking signatures, Responses reasoning items), keyed by API mode.
    """

    # wire forms, their JSON and token estimates already computed for this message, by key.
    # Assigning any field after __init__ empties it (see __setattr__). `tool_calls` and
    # `provider_data` are replaced, never edited in place, for the same reason.
    wire_cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False,
                                       compare=False)
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    is_error: bool = False
    provider_data: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)  # images, PDFs (user, tool)
    # what the runtime says of this message: "runtime_note" (a user turn it wrote), "set_aside"
    # (a reply its review left out of later requests), "interrupted" (the result it gave a call
    # a crash cut off, interrupted.py), "key_scope:<hashed session id>" (on that result: the
    # session its idempotency key was made in, tools/idempotency.py); never sent to a model
    marks: frozenset[str] = frozenset()

    # Written out rather than generated: the generated __init__ assigns each field through
    # __setattr__ below, a Python call per field (about 22 a turn); a new message has nothing
    # cached, so its fields are set directly. The defaults are the fields' above.
    def __init__(self, *, role: Role, content: str = "", tool_calls: list[ToolCall] | None = None,
                 tool_call_id: str | None = None, name: str | None = None,
                 reasoning: str | None = None, is_error: bool = False,
                 provider_data: dict[str, Any] | None = None,
                 attachments: list[Attachment] | None = None,
                 marks: frozenset[str] = frozenset()) -> None:
        put = object.__setattr__
        put(self, "wire_cache", {})
        put(self, "role", role)
        put(self, "content", content)
        put(self, "tool_calls", [] if tool_calls is None else tool_calls)
        put(self, "tool_call_id", tool_call_id)
        put(self, "name", name)
        put(self, "reasoning", reasoning)
        put(self, "is_error", is_error)
        put(self, "provider_data", {} if provider_data is None else provider_data)
        put(self, "attachments", [] if attachments is None else attachments)
        put(self, "marks", marks)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name != "wire_cache":
            cache = self.wire_cache
            if cache:  # a message something already derived forms from was edited in place
                cache.clear()
                _EDITS[0] += 1

    def to_dict(self) -> dict[str, Any]:
        """The internal JSON form (used by export, storage and events)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.is_error:
            out["is_error"] = True
        if self.provider_data:
            out["provider_data"] = self.provider_data
        if self.attachments:
            out["attachments"] = [a.to_dict() for a in self.attachments]
        if self.marks:
            out["marks"] = sorted(self.marks)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=[ToolCall(**c) for c in data.get("tool_calls") or []],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning=data.get("reasoning"),
            is_error=bool(data.get("is_error", False)),
            provider_data=dict(data.get("provider_data") or {}),
            attachments=[Attachment.from_dict(a) for a in data.get("attachments") or []],
            marks=frozenset(data.get("marks") or ()),
        )


# how many messages with cached forms were edited in place, ever: a cache derived from many
# messages (an incremental token sum) is valid only while this has not moved
_EDITS = [0]


def edits_so_far() -> int:
    """A counter that moves whenever a message with cached forms is edited in place."""
    return _EDITS[0]


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(text: str, attachments: Iterable[Attachment] = ()) -> Message:
    return Message(role="user", content=text, attachments=list(attachments))


def assistant(text: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
    return Message(role="assistant", content=text, tool_calls=list(tool_calls or []))


def tool_result(call: ToolCall, content: str, *, is_error: bool = False,
                attachments: Iterable[Attachment] = ()) -> Message:
    return Message(
        role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error,
        attachments=list(attachments),
    )


_new_object = object.__new__


@dataclass(kw_only=True, slots=True)
class Usage:
    """Token counts. `None`-free: unknown counts are 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.requests += other.requests

    def copy(self) -> Usage:
        """A copy, its slots set one by one on a bare instance: calling the class with keywords
        builds a dict of them for `__init__` (0.71 against 0.29 µs; twice a listened-to turn:
        the turn's `usage` before it, and the model call's record)."""
        out = _new_object(Usage)
        out.input_tokens = self.input_tokens
        out.output_tokens = self.output_tokens
        out.cache_read_tokens = self.cache_read_tokens
        out.cache_write_tokens = self.cache_write_tokens
        out.reasoning_tokens = self.reasoning_tokens
        out.requests = self.requests
        return out

    def since(self, before: Usage) -> dict[str, int]:
        """What was added after `before` (a `copy()` of this), in `to_dict()`'s form."""
        return {
            "input_tokens": self.input_tokens - before.input_tokens,
            "output_tokens": self.output_tokens - before.output_tokens,
            "cache_read_tokens": self.cache_read_tokens - before.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens - before.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens - before.reasoning_tokens,
            "requests": self.requests - before.requests,
        }

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "requests": self.requests,
        }


def usage_plus(total: Usage | None, more: Usage | None) -> Usage | None:
    """`total` with `more` added, made on first use (a model call's thrown-away replies: most
    calls have none, and they pay for no `Usage` then)."""
    if more is None:
        return total
    total = total or Usage()
    total.add(more)
    return total


@dataclass(kw_only=True, slots=True)
class ModelResponse:
    """One normalised model reply."""

    message: Message
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    raw: Any = None
    # what was wrong with call markup in the text that could not be read as calls (set by the
    # text-call reader; the review stage's `call_format` check sends it back)
    unreadable_calls: list[str] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class ToolSpec:
    """A tool as advertised to the model."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False


@dataclass(kw_only=True, slots=True)
class ModelRequest:
    """One call to a model, in internal form. `messages` is already sanitised."""

    model: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: str | None = None
    tool_choice: str | None = None  # None = provider default ("auto" when tools are sent)
    response_format: dict[str, Any] | None = None  # OpenAI's {"type": "json_schema", …}
    extra_body: dict[str, Any] = field(default_factory=dict)
    # what the window leaves for the reply, estimated before sending (context/compaction.py);
    # a wire format that must send an output limit (Anthropic) fits its default to it
    output_room: int | None = None
    # the user's request this call serves: a note the client adds on its own (the empty-reply
    # nudge) restates it, as a small model read a note alone as the user's whole message
    user_request: str = ""
    # the reply begun for the model (a call's opening, `Profile.call_opening`): Chat Completions
    # sends it as a last assistant message, which llama.cpp continues; a reply that then holds
    # no call is given back with it in front (`ModelClient.complete`), so the call markup it
    # began can still be read from the text
    prefill: str = ""


# --- history rules ----------------------------------------------------------------------------

_attachments_of = attrgetter("attachments")


def any_attachments(messages: Sequence[Message], *, role: str | None = None) -> bool:
    """Whether one of `messages` (of `role`, when given) carries an attachment. Every request
    walks the whole history with it, so the common answer (none at all) is found at C speed,
    without a Python step per message."""
    if not any(map(_attachments_of, messages)):
        return False
    return any(m.attachments and m.role == role for m in messages) if role is not None else True


def sanitize(history: list[Message], *, apart: Collection[int] = (), _start: int = 0,
             _seed: list[Message] | None = None) -> list[Message]:
    """Return a history that every provider accepts.

    - a tool call with no result is dropped from its assistant message (an assistant message left
      empty is dropped too);
    - a tool result whose call is not in the preceding assistant message is removed;
    - duplicate results for one call keep the first;
    - call arguments that are not one JSON object (a history recorded before they were stored
      valid, or built by hand) are sent repaired, or as `{}`: some servers reject the whole
      request otherwise;
    - after the system message, user and assistant alternate: consecutive user messages are merged,
      consecutive assistant messages (without tool calls) are merged — except a user message
      whose `id()` is in `apart`, which stays a turn of its own (a note that follows a reply set
      aside: merged into the request before it, the 0.5B answered the request and ignored it).

    The input list is not modified; unchanged messages are reused, not copied.
    """
    out: list[Message] = _seed if _seed is not None else []
    i, n = _start, len(history)
    while i < n:
        msg = history[i]
        if msg.role == "assistant" and msg.tool_calls:
            j = i + 1
            results: list[Message] = []
            while j < n and history[j].role == "tool":
                results.append(history[j])
                j += 1
            if not _answered_in_order(msg.tool_calls, results):
                msg, results = _paired(msg, results)
            msg = with_storable_arguments(msg)
            if msg.tool_calls or msg.content or msg.reasoning:
                _append(out, msg, apart)
            out.extend(results)
            i = j
            continue
        if msg.role == "tool":
            i += 1  # orphan result: its call is not right before it
            continue
        _append(out, msg, apart)
        i += 1
    return out


_call_id = attrgetter("id")
_result_id = attrgetter("tool_call_id")


def _answered_in_order(calls: list[ToolCall], results: list[Message]) -> bool:
    """Whether `results` answer `calls` one each, in their order, with distinct ids: the group
    a run writes, kept as it is (checked at C speed, no Python step per call)."""
    ids = list(map(_call_id, calls))
    return list(map(_result_id, results)) == ids and len(set(ids)) == len(ids)


def _paired(msg: Message, results: list[Message]) -> tuple[Message, list[Message]]:
    """An assistant message's calls and the results after it, made to pair: calls with no
    result dropped, results of no call or a copy's dropped, results in the calls' order."""
    call_ids = {c.id for c in msg.tool_calls}
    seen: set[str] = set()
    kept_results: list[Message] = []
    for r in results:
        if r.tool_call_id in call_ids and r.tool_call_id not in seen:
            seen.add(r.tool_call_id)
            kept_results.append(r)
    kept_calls = [c for c in msg.tool_calls if c.id in seen]
    if len(kept_calls) != len(msg.tool_calls):
        msg = _replace_calls(msg, kept_calls)
    # results keep the order of the calls so every wire format pairs them correctly
    order = {c.id: k for k, c in enumerate(kept_calls)}
    kept_results.sort(key=lambda r: order[r.tool_call_id or ""])
    return msg, kept_results


class Sanitizer:
    """`sanitize()` for a history that mostly grows by appends: the cleaned part up to the last
    complete tool-result group is remembered, so each turn only re-cleans what came after it.

    A boundary right after a complete tool-result group is safe: nothing merges across it, and
    nothing after it changes how the messages before it are cleaned. The remembered part is
    reused only while the history still starts with the very same message objects (checked by
    identity, at C speed), so in-place edits such as pruning invalidate it.
    """

    __slots__ = ("_boundary", "_prefix", "_source_prefix")

    def __init__(self) -> None:
        self._boundary = 0  # source index where the remembered prefix ends
        self._source_prefix: list[Message] = []
        self._prefix: list[Message] = []

    def __call__(self, history: list[Message], apart: Collection[int] = ()) -> list[Message]:
        # list equality tries identity first, element by element, so this is a memcmp-like scan
        if self._boundary and history[: self._boundary] != self._source_prefix:
            self._boundary, self._source_prefix, self._prefix = 0, [], []
        out = sanitize(history, apart=apart, _start=self._boundary, _seed=list(self._prefix))
        self._remember(history, out)
        return out

    def _remember(self, history: list[Message], out: list[Message]) -> None:
        # a group is known to be complete when a non-tool message follows its last result, or
        # when its results answer every call (a tool loop's request ends so: then the next turn
        # cleans only its own reply and results, not the previous turn's again)
        j = len(history) - 1
        if j < self._boundary or not _answers_every_call(history, j):
            j -= 1
            while j >= self._boundary and not (
                history[j].role == "tool" and history[j + 1].role != "tool"
            ):
                j -= 1
        if j < self._boundary:
            return
        marker = history[j]
        for k in range(len(out) - 1, -1, -1):
            if out[k] is marker:
                self._boundary = j + 1
                self._source_prefix = history[: j + 1]
                self._prefix = out[: k + 1]
                return


def _answers_every_call(history: list[Message], last: int) -> bool:
    """Whether `history[last]` ends a run of tool results that answers every call of the
    assistant message before it. Nothing appended later changes how such a group is cleaned:
    a result that follows it can only be a copy or an orphan, dropped either way."""
    answered: set[str | None] = set()
    i = last
    while i >= 0 and history[i].role == "tool":
        answered.add(history[i].tool_call_id)
        i -= 1
    if i < 0 or i == last or history[i].role != "assistant" or not history[i].tool_calls:
        return False
    return answered.issuperset(map(_call_id, history[i].tool_calls))


def _replace_calls(msg: Message, calls: list[ToolCall]) -> Message:
    return Message(
        role=msg.role,
        content=msg.content,
        tool_calls=calls,
        reasoning=msg.reasoning,
        # provider blocks describe the original calls; they cannot be sent back once calls drop
        provider_data={} if calls != msg.tool_calls else msg.provider_data,
        marks=msg.marks,
    )


def _append(out: list[Message], msg: Message, apart: Collection[int] = ()) -> None:
    if not out:
        out.append(msg)
        return
    prev = out[-1]
    if msg.role == "system" and prev.role != "system":
        # a late system message is kept as a user note, so alternation holds
        msg = Message(role="user", content=msg.content)
    if msg.role == prev.role and msg.role == "user" and id(msg) not in apart:
        out[-1] = Message(role="user", content=_join(prev.content, msg.content),
                          attachments=[*prev.attachments, *msg.attachments])
        return
    if (
        msg.role == prev.role == "assistant"
        and not prev.tool_calls
        and not prev.provider_data
        and not msg.provider_data
    ):
        out[-1] = Message(
            role="assistant",
            content=_join(prev.content, msg.content),
            tool_calls=msg.tool_calls,
            reasoning=_join(prev.reasoning or "", msg.reasoning or "") or None,
        )
        return
    out.append(msg)


def _join(a: str, b: str) -> str:
    if not a:
        return b
    if not b:
        return a
    return f"{a}\n\n{b}"


def plain_history(history: list[Message]) -> list[Message]:
    """The history with every assistant message rebuilt from its plain parts: provider blocks
    (thinking signatures, reasoning items) dropped and call arguments re-serialised. What is
    resent, once, after a provider rejected a request as malformed. Unchanged messages are kept."""
    out: list[Message] = []
    for msg in history:
        if msg.role == "assistant" and (msg.provider_data or msg.tool_calls):
            calls = [ToolCall(id=c.id, name=c.name, arguments=_canonical(c.arguments))
                     for c in msg.tool_calls]
            if msg.provider_data or calls != msg.tool_calls:
                msg = Message(role="assistant", content=msg.content, tool_calls=calls,
                              reasoning=msg.reasoning, marks=msg.marks)
        out.append(msg)
    return out


def _canonical(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return "{}"
    if not isinstance(value, dict):
        return "{}"
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def messages_to_jsonl(history: list[Message]) -> str:
    return "".join(json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in history)


def with_user_note(messages: list[Message], note: str) -> list[Message]:
    """`messages` with `note` added to the last user message — a new message, never an edit
    (the history holds the same object), with all it carries (attachments) — or, when the last
    message is not the user's, as a new user message."""
    if messages and messages[-1].role == "user":
        last = messages[-1]
        return [*messages[:-1], replace(last, content=f"{last.content}\n\n{note}")]
    return [*messages, Message(role="user", content=note)]


async def with_storable_arguments_async(msg: Message, *, cut: bool = False) -> Message:
    """`with_storable_arguments` in a worker thread when the arguments are large (repairing
    them must not stall the event loop)."""
    if sum(len(c.arguments) for c in msg.tool_calls) > OFF_LOOP_CHARS:
        return await asyncio.to_thread(with_storable_arguments, msg, cut=cut)
    return with_storable_arguments(msg, cut=cut)


def with_storable_arguments(msg: Message, *, cut: bool = False) -> Message:
    """`msg` itself when every call's arguments are a JSON object, else a copy whose calls are
    (`cut`: the reply was stopped by the output limit, so arguments that do not parse are cut)."""
    if all(is_json_object(c.arguments) for c in msg.tool_calls):
        return msg
    return with_tool_calls(msg, [
        ToolCall(id=c.id, name=c.name, arguments=storable_arguments(c.arguments, cut=cut))
        for c in msg.tool_calls])


def with_tool_calls(msg: Message, calls: list[ToolCall]) -> Message:
    """A copy of `msg` with `calls` (a new message, so no wire form cached on it goes stale)."""
    return Message(role=msg.role, content=msg.content, tool_calls=calls, name=msg.name,
                   reasoning=msg.reasoning, is_error=msg.is_error,
                   provider_data=msg.provider_data)
