"""Format-neutral scripts for the fake model server: replies, tool calls, faults, requests.

A script is a list of `Reply` and `Fault` items. The server renders each item in whatever wire
format the request used (Chat Completions, Anthropic Messages or Responses), streaming or not, so
one script drives every provider adapter. Scripts also have a JSON form (`Reply.from_dict`,
`Fault.from_dict`, `load_script`) for the subprocess entry point.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

WireFormat: TypeAlias = Literal["chat_completions", "anthropic_messages", "responses"]
"""The three wire formats the server speaks, named like loopwright's API modes."""

FinishReason: TypeAlias = Literal["tool_calls", "end_turn", "length", "content_filter"]
"""The normalised stop reason of a reply; each format renders it its own way."""

FaultKind: TypeAlias = Literal[
    "rate_limit", "status", "overloaded", "cut_stream", "stall", "disconnect", "stream_error"
]

# Every spelling a test author might reach for, mapped to the normalised reason.
_FINISH_ALIASES: dict[str, FinishReason] = {
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "end_turn": "end_turn",
    "stop": "end_turn",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


@dataclass(frozen=True, kw_only=True)
class ScriptedUsage:
    """Token counts to report instead of the server's estimate.

    `input_tokens` is the whole prompt, cache hits included (OpenAI's meaning). The Anthropic
    rendering subtracts `cache_read_tokens` and `cache_write_tokens` from it, because Anthropic's
    `input_tokens` counts only the uncached part.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScriptedUsage:
        """Build from a dict with the field names above; unknown keys are an error."""
        _reject_unknown_keys(cls, data, "usage")
        return cls(**{key: int(value) for key, value in data.items()})

    def to_dict(self) -> dict[str, int]:
        """The JSON form read by `from_dict`."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One tool call in a scripted reply; build it with `call()`."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    """A dict is sent as JSON; a string is sent verbatim (for malformed arguments)."""
    id: str | None = None
    """`None` lets the server generate a format-appropriate id (`call_…`, `toolu_…`)."""

    @property
    def arguments_json(self) -> str:
        """The arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScriptedCall:
        """Build from `{"name": ..., "arguments": {...} | "raw", "id": ...}`."""
        _reject_unknown_keys(cls, data, "tool call")
        if not isinstance(data.get("name"), str):
            raise ValueError(f"tool call needs a string 'name': {data!r}")
        return cls(name=data["name"], arguments=data.get("arguments", {}), id=data.get("id"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form read by `from_dict`."""
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.id is not None:
            out["id"] = self.id
        return out


def call(
    name: str, arguments: Mapping[str, Any] | str | None = None, /, *, id: str | None = None
) -> ScriptedCall:
    """A scripted tool call: `call("add", {"a": 1})`, or `call("add", '{"a": 1,')` for bad JSON."""
    return ScriptedCall(name=name, arguments={} if arguments is None else arguments, id=id)


@dataclass(frozen=True)
class Reply:
    """One format-neutral model reply: text, tool calls, reasoning, stop reason, usage.

    `Reply()` with nothing in it is an empty reply (no text, no tool calls).
    """

    text: str = ""
    _: KW_ONLY
    tool_calls: Sequence[ScriptedCall] = ()
    reasoning: str | None = None
    """Rendered as `reasoning_content`, an Anthropic `thinking` block or a Responses summary."""
    finish_reason: str | None = None
    """`None` = auto (`tool_calls` when there are calls, else `end_turn`). Also accepted:
    `"length"` (cut by the output limit), `"content_filter"`, and the aliases `stop`,
    `tool_use`, `max_tokens`."""
    usage: ScriptedUsage | None = None
    """`None` = estimated: about len(request JSON)/4 input tokens, len(output)/4 output tokens."""
    signature: str | None = None
    """Thinking signature (Anthropic) / `encrypted_content` (Responses); generated if `None`."""
    chunk_size: int = 8
    """Characters per streamed delta (text, reasoning, arguments). Anything longer than one
    character is split into at least two deltas, so client accumulation is always exercised."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    empty_id: bool = False
    """Quirk: send tool calls with `id: ""`, as some OpenAI-compatible servers do."""
    null_fields: bool = False
    """Quirk (Chat Completions): explicit `content: null` / `tool_calls: null` fields and a
    final stream chunk whose `delta` is `null`."""
    interleave_calls: bool = False
    """Stream parallel tool calls interleaved by index instead of one after another."""
    model: str | None = None
    """Model name to report; default: the request's `model`."""

    def __post_init__(self) -> None:
        # A list literal is the natural way to write calls; keep the frozen reply immutable.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.finish_reason is not None and self.finish_reason not in _FINISH_ALIASES:
            allowed = ", ".join(sorted(_FINISH_ALIASES))
            raise ValueError(f"unknown finish_reason {self.finish_reason!r}; use one of {allowed}")
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")

    @property
    def stop_reason(self) -> FinishReason:
        """The normalised stop reason, with the automatic default applied."""
        if self.finish_reason is not None:
            return _FINISH_ALIASES[self.finish_reason]
        return "tool_calls" if self.tool_calls else "end_turn"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reply:
        """Build from the JSON form; unknown keys are an error so typos fail loudly."""
        _reject_unknown_keys(cls, data, "reply")
        values = dict(data)
        values["tool_calls"] = tuple(ScriptedCall.from_dict(c) for c in data.get("tool_calls", ()))
        if data.get("usage") is not None:
            values["usage"] = ScriptedUsage.from_dict(data["usage"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form read by `from_dict`, without fields left at their defaults."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if f.name == "tool_calls":
                value = [c.to_dict() for c in value]
            elif f.name == "usage":
                value = value.to_dict()
            out[f.name] = value
        return out


@dataclass(frozen=True, kw_only=True)
class Fault:
    """A failure to serve instead of a reply; build it with the class methods."""

    kind: FaultKind
    code: int = 0
    body: Any = None
    """JSON value (or raw string) of the error body; `None` = a format-appropriate error."""
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    retry_after_ms: int | None = None
    reply: Reply | None = None
    after_chunks: int = 0
    seconds: float = 0.0

    @classmethod
    def rate_limit(
        cls, retry_after: float | None = None, retry_after_ms: int | None = None
    ) -> Fault:
        """HTTP 429, with `Retry-After` (seconds) and/or `retry-after-ms` headers when given."""
        return cls(
            kind="rate_limit", code=429, retry_after=retry_after, retry_after_ms=retry_after_ms
        )

    @classmethod
    def status(cls, code: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Fault:
        """Any HTTP error status (400, 401, 500, 502, 503, …) with an optional body and headers."""
        return cls(kind="status", code=code, body=body, headers=dict(headers or {}))

    @classmethod
    def overloaded(cls) -> Fault:
        """HTTP 529 with an `overloaded_error` body (Anthropic's exact body in that format)."""
        return cls(kind="overloaded", code=529)

    @classmethod
    def cut_stream(cls, reply: Reply | None = None, *, after_chunks: int = 2) -> Fault:
        """Stream `after_chunks` SSE events of `reply`, then drop the connection mid-body.

        A non-streaming request gets its connection closed without any response.
        """
        return cls(
            kind="cut_stream",
            reply=_UNFINISHED if reply is None else reply,
            after_chunks=after_chunks,
        )

    @classmethod
    def stall(
        cls, reply: Reply | None = None, *, after_chunks: int = 2, seconds: float = 5.0
    ) -> Fault:
        """Stream `after_chunks` events, go silent for `seconds`, then finish the reply.

        A non-streaming request gets the whole reply after `seconds`.
        """
        return cls(
            kind="stall",
            reply=_UNFINISHED if reply is None else reply,
            after_chunks=after_chunks,
            seconds=seconds,
        )

    @classmethod
    def stream_error(cls, reply: Reply | None = None, *, after_chunks: int = 2,
                     code: int = 529) -> Fault:
        """Stream `after_chunks` events, then the format's own mid-stream error event (for 529 an
        `overloaded_error`, as Anthropic sends), and end the body cleanly.

        A non-streaming request gets HTTP `code` with the format's error body.
        """
        return cls(kind="stream_error", code=code,
                   reply=_UNFINISHED if reply is None else reply, after_chunks=after_chunks)

    @classmethod
    def disconnect(cls) -> Fault:
        """Close the connection without sending any response."""
        return cls(kind="disconnect")

    @staticmethod
    def empty() -> Reply:
        """A reply with no text and no tool calls (the same as `Reply()`)."""
        return Reply()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fault:
        """Build from `{"fault": KIND, ...}` with the keyword arguments of the class method."""
        values = dict(data)
        kind = values.pop("fault", None)
        if kind not in get_args(FaultKind):
            raise ValueError(f"unknown fault {kind!r}; use one of {', '.join(get_args(FaultKind))}")
        if isinstance(values.get("reply"), Mapping):
            values["reply"] = Reply.from_dict(values["reply"])
        factory: Callable[..., Fault] = getattr(cls, kind)
        accepted = set(inspect.signature(factory).parameters)
        if unknown := set(values) - accepted:
            raise ValueError(
                f"unknown fault {kind!r} field(s) {sorted(unknown)}; known: {sorted(accepted)}"
            )
        try:
            return factory(**values)
        except TypeError as exc:  # a required argument is missing, e.g. `code` of a status
            raise ValueError(f"fault {kind!r}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form read by `from_dict`."""
        out: dict[str, Any] = {"fault": self.kind}
        if self.kind == "rate_limit":
            out |= _without_none(retry_after=self.retry_after, retry_after_ms=self.retry_after_ms)
        elif self.kind == "status":
            out |= _without_none(code=self.code, body=self.body, headers=dict(self.headers) or None)
        elif self.kind in ("cut_stream", "stall", "stream_error"):
            out["after_chunks"] = self.after_chunks
            out["reply"] = (self.reply or Reply()).to_dict()
            if self.kind == "stream_error":
                out["code"] = self.code
            if self.kind == "stall":
                out["seconds"] = self.seconds
        return out


ScriptItem: TypeAlias = Reply | Fault
"""One entry of a script: what the server answers to one model request."""

_UNFINISHED = Reply("This reply is interrupted before it can finish.")


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request the server received, as tests want to inspect it."""

    method: str
    path: str
    """The path without the query string, e.g. `/v1/chat/completions`."""
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or `None` when empty or not JSON."""
    format: WireFormat | None
    """Which model API was called; `None` for `/models` and probe requests."""
    query: str = ""
    raw_body: bytes = b""

    @property
    def stream(self) -> bool:
        """Whether the request asked for a streamed response (`"stream": true`)."""
        return isinstance(self.body, dict) and self.body.get("stream") is True

    @property
    def model(self) -> str | None:
        """The `model` field of the request body, if any."""
        model = self.body.get("model") if isinstance(self.body, dict) else None
        return model if isinstance(model, str) else None


Handler: TypeAlias = Callable[[RecordedRequest], ScriptItem | Awaitable[ScriptItem]]
"""Decides the answer to each model request; called on the server's own thread and loop."""


def item_from_dict(data: Mapping[str, Any]) -> ScriptItem:
    """One script entry from JSON: a fault if it has a `"fault"` key, else a reply."""
    if not isinstance(data, Mapping):
        raise ValueError(f"script entries are JSON objects, got {data!r}")
    if "fault" in data:
        if data["fault"] == "empty":
            return Reply()
        return Fault.from_dict(data)
    return Reply.from_dict(data)


def item_to_dict(item: ScriptItem) -> dict[str, Any]:
    """The JSON form of one script entry."""
    return item.to_dict()


def load_script(source: str | Path | Iterable[Mapping[str, Any]]) -> list[ScriptItem]:
    """Read a script: a path to a JSON file holding a list, or the already-parsed list."""
    entries: Any = source
    if isinstance(source, str | Path):
        entries = json.loads(Path(source).read_text(encoding="utf-8"))
    if not isinstance(entries, list | tuple):
        raise ValueError("a script is a JSON list of replies and faults")
    return [item_from_dict(entry) for entry in entries]


def _reject_unknown_keys(cls: type, data: Mapping[str, Any], what: str) -> None:
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown {what} field(s) {sorted(unknown)}; known: {sorted(known)}")


def _without_none(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
