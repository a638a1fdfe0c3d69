"""Request bodies assembled from JSON text cached per message.

A turn re-sends the whole history. Each message's JSON is written once (kept in
`Message.wire_cache`, which empties itself when the message is edited) and a body is the join of
those pieces around a small freshly serialised head, so a turn serialises only what is new.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from loopwright.messages import Message, ModelRequest, ToolSpec, edits_so_far
from loopwright.profiles import GENERIC, Profile

# One encoder for every body, made once: `json.dumps` with options builds a `JSONEncoder` per
# call, and `JSONEncoder.encode` a C encoder per call (Python frames, several times a turn).
# Without the cycle check (`markers=None`), which a long-lived C encoder cannot share safely: a
# body is built from our own messages, the model's parsed JSON and settings, never a cycle.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_make_c_encoder: Callable[..., Callable[[Any, int], Iterable[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None)  # the accelerator's, untyped in typeshed
_C_ENCODE = (_make_c_encoder(None, _ENCODER.default, json.encoder.encode_basestring, None, ":",
                             ",", False, False, True) if _make_c_encoder is not None else None)


def dumps(value: Any) -> str:
    """The one JSON spelling of request bodies (compact, UTF-8 kept)."""
    if _C_ENCODE is None:  # an interpreter without the json accelerator
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


# `json.dumps(value)`'s own spelling (", " and ": ", ASCII only), for text that must read as
# the standard library writes it (a parsed object turned back into call arguments): without
# the `JSONEncoder.encode` / `iterencode` frames and the C encoder `json.dumps` makes per call.
# Without the cycle check, as `_C_ENCODE`: what it writes was parsed from JSON, never a cycle
_DEFAULT = json.JSONEncoder()
_C_ENCODE_DEFAULT = (_make_c_encoder(None, _DEFAULT.default, json.encoder.encode_basestring_ascii,
                                     None, ": ", ", ", False, False, True)
                     if _make_c_encoder is not None else None)


def dumps_as_json_dumps(value: Any) -> str:
    """`json.dumps(value)`, the same text, for a value parsed from JSON."""
    if _C_ENCODE_DEFAULT is None:
        return json.dumps(value)
    return "".join(_C_ENCODE_DEFAULT(value, 0))


def cached_piece(msg: Message, key: str, items: Callable[[Message], list[Any]]) -> str:
    """The JSON of `items(msg)` as comma-joined array elements (no brackets; "" for none),
    written once per message under `key`."""
    piece: str | None = msg.wire_cache.get(key)
    if piece is None:
        piece = msg.wire_cache[key] = dumps(items(msg))[1:-1]
    return piece


class Spliced:
    """A JSON array in a body given two ways: `json()` the text of its elements (no brackets),
    joined from cached pieces; `objects()` the array as Python objects, for `build_body`."""

    __slots__ = ("json", "objects")

    def __init__(self, json_text: Callable[[], str], objects: Callable[[], list[Any]]) -> None:
        self.json = json_text
        self.objects = objects


class Encoded:
    """A body value given as its JSON text, written once and reused: a part of the body that
    is the same every turn (the tools, the instructions)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


# the tools' JSON by what it was written from: the spec objects' names, descriptions,
# strictness and schema dicts (identity; a schema is replaced, never edited in place, as
# context/tokens.estimate_tool assumes too). Specs are built once per tool and sent every turn.
_ToolsKey = tuple[Any, ...]
_tools_json: dict[_ToolsKey, tuple[list[dict[str, Any]], str]] = {}
_TOOLS_KEPT = 256


def encoded_tools(kind: str, tools: list[ToolSpec],
                  to_wire: Callable[[list[ToolSpec]], list[Any]]) -> Encoded:
    """`to_wire(tools)` as JSON, written once for the same specs (`kind` tells the wire forms
    of one list apart: the API mode, a cache mark)."""
    key = (kind, *[(spec.name, spec.description, spec.strict, id(spec.parameters))
                   for spec in tools])
    hit = _tools_json.get(key)
    if hit is not None and all(a is b.parameters for a, b in zip(hit[0], tools, strict=True)):
        return Encoded(hit[1])
    text = dumps(to_wire(tools))
    if len(_tools_json) >= _TOOLS_KEPT:
        _tools_json.clear()
    _tools_json[key] = ([spec.parameters for spec in tools], text)  # keeps the ids in use
    return Encoded(text)


class Joined:
    """The joined JSON text of a request's first `count` messages, kept on the last of them
    (`wire_cache[key]`) so the next turn of the same run starts from it."""

    __slots__ = ("before", "count", "edits", "extra", "text")

    def __init__(self, messages: list[Message], text: str, extra: Any = None) -> None:
        # the messages before the one it is kept on: that one in it too would make a cycle
        # (the message, its cache, this, the list), and a finished run's whole history
        # garbage that only the collector frees, not its reference counts
        self.before = messages[:-1]
        self.count = len(messages)
        self.text = text
        self.extra = extra  # what the adapter needs to continue (Anthropic: the last role)
        self.edits = edits_so_far()


def find_joined(messages: list[Message], key: str) -> Joined | None:
    """The `Joined` text of a prefix of `messages`, if one is kept and still true: the request
    starts with the very messages it covers and no message was edited in place since. Found by
    looking back from the end (a few steps: a turn adds a reply, its results, a note); one that
    is no longer true is dropped."""
    for i in range(len(messages) - 1, -1, -1):
        entry = messages[i].wire_cache.get(key)
        if isinstance(entry, Joined):
            if (entry.count == i + 1 and entry.edits == edits_so_far()
                    and messages[:i] == entry.before):
                return entry
            messages[i].wire_cache.pop(key, None)
            return None
    return None


def remember_joined(messages: list[Message], count: int, text: str, key: str,
                    previous: Joined | None, extra: Any = None) -> None:
    """Keep the joined `text` of `messages[:count]` for the next turn (and drop the previous
    one, `find_joined`'s answer for these `messages`, so a run holds one)."""
    if previous is not None and previous.count:
        messages[previous.count - 1].wire_cache.pop(key, None)  # where it was found
    if count:
        messages[count - 1].wire_cache[key] = Joined(messages[:count], text, extra)


def join_pieces(messages: list[Message], key: str, piece: Callable[[Message], str]) -> str:
    """The comma-joined pieces of `messages` (empty ones skipped), reusing the text joined for
    the previous turn. All but the last message is remembered: the last one is often a copy
    made for one request (a reminder note added to it)."""
    entry = find_joined(messages, key)
    start, text = (entry.count, entry.text) if entry is not None else (0, "")
    if start == len(messages):
        return text
    fresh = [piece(m) for m in messages[start:]]
    kept = ",".join([p for p in (text, *fresh[:-1]) if p])
    if len(messages) - 1 > start:
        remember_joined(messages, len(messages) - 1, kept, key, entry)
    return f"{kept},{fresh[-1]}" if kept and fresh[-1] else kept or fresh[-1]


def materialize(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with every spliced array and encoded value turned into ordinary objects (an
    encoded one read back from its text: a fresh object, never the one kept for reuse)."""
    return {k: v.objects() if isinstance(v, Spliced)
            else json.loads(v.text) if isinstance(v, Encoded) else v for k, v in body.items()}


def encode_body(body: dict[str, Any]) -> bytes:
    """The bytes of `body`: plain values serialised now, spliced arrays joined from their cached
    pieces and encoded values as their text (placed after the plain keys; key order means
    nothing in JSON)."""
    plain: dict[str, Any] = {}
    ready: list[str] = []  # each `,"key":text`; keys of our own (messages…): no escaping needed
    for key, value in body.items():  # one pass, a type test a key: this runs every turn
        kind = type(value)
        if kind is Spliced:
            ready.append(f',"{key}":[{value.json()}]')
        elif kind is Encoded:
            ready.append(f',"{key}":{value.text}')
        else:
            plain[key] = value
    head = dumps(plain)
    if not ready:
        return head.encode()
    tail = "".join(ready)
    return (f"{head[:-1]}{tail}}}" if len(head) > 2 else f"{{{tail[1:]}}}").encode()


class SplicedBodyFormat:
    """A wire format whose body is assembled by `_body` from cached pieces: the dict form for
    inspection, the encoded bytes (joined, not re-serialised) for sending."""

    def build_body(self, request: ModelRequest, *, stream: bool,
                   profile: Profile = GENERIC) -> dict[str, Any]:
        return materialize(self._body(request, stream, profile))

    def encode_body(self, request: ModelRequest, *, stream: bool,
                    profile: Profile = GENERIC) -> bytes:
        return encode_body(self._body(request, stream, profile))

    def _body(self, request: ModelRequest, stream: bool, profile: Profile) -> dict[str, Any]:
        raise NotImplementedError
