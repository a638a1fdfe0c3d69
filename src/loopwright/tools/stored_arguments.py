"""Tool-call arguments as they are kept in history: always one valid JSON object.

A model's raw arguments may be cut off by the output limit (`{"a":`) or broken beyond repair.
They still reach the executor as written (so the model gets a precise error), but history keeps
valid JSON: some servers (llama.cpp) parse every call in the history and reject the whole request,
on every later turn, when one call's arguments do not parse.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterable

from loopwright.messages import Message, ToolCall, ToolSpec
from loopwright.tools.arguments import OFF_LOOP_CHARS, loads_bounded

EMPTY = "{}"


# the same arguments are checked several times a turn (stored, sanitised, screened): short ones
# are remembered (a string's hash is computed once and kept by the string)
_MEMO_CHARS = 2048


def is_json_object(raw: str) -> bool:
    """True when `raw` is the text of one JSON object (the fast, common case)."""
    if len(raw) <= _MEMO_CHARS:
        return _short_is_json_object(raw)
    return _is_json_object(raw)


def _is_json_object(raw: str) -> bool:
    text = raw.strip()
    if not text.startswith("{"):
        return False
    try:
        return isinstance(loads_bounded(text), dict)
    except ValueError:
        return False


@functools.lru_cache(maxsize=4096)
def _short_is_json_object(raw: str) -> bool:
    return _is_json_object(raw)


def storable_arguments(raw: str, *, cut: bool = False) -> str:
    """`raw` if it is a JSON object; else the object it repairs to (what the tool ran with);
    else `{}`. Arguments cut off by the output limit are stored as `{}`: the call never ran."""
    if is_json_object(raw):
        return raw
    if cut or not raw.strip():
        return EMPTY
    from loopwright.tools.arguments import ArgumentsError, parse_arguments

    try:
        value = parse_arguments(raw).value
    except (ArgumentsError, RecursionError):
        return EMPTY
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return EMPTY


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
    return _with_calls(msg, [
        ToolCall(id=c.id, name=c.name, arguments=storable_arguments(c.arguments, cut=cut))
        for c in msg.tool_calls])


def without_ignored_arguments(msg: Message, tools: Iterable[ToolSpec]) -> Message:
    """`msg` with the calls of tools that take no arguments given `{}`: what such a tool runs
    with whatever was sent, and what makes copies of one call one call (the 0.5B sent
    `list_files` `{}` and, in the same reply, five copies of its schema as the arguments, then
    called it with the schema again for as long as it had tools)."""
    from loopwright.tools.schema_echo import takes_no_arguments

    free = {t.name for t in tools if takes_no_arguments(t.parameters)}
    if not any(c.name in free and c.arguments != EMPTY for c in msg.tool_calls):
        return msg
    return _with_calls(msg, [ToolCall(id=c.id, name=c.name, arguments=EMPTY)
                             if c.name in free else c for c in msg.tool_calls])


def _with_calls(msg: Message, calls: list[ToolCall]) -> Message:
    """A copy of `msg` with `calls` (a new message, so no wire form cached on it goes stale)."""
    return Message(role=msg.role, content=msg.content, tool_calls=calls, name=msg.name,
                   reasoning=msg.reasoning, is_error=msg.is_error,
                   provider_data=msg.provider_data)
