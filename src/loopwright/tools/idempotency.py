"""Idempotency keys: one per tool call, kept by a call the model makes again after a crash.

A crash can stop a call after its effect and before its result was stored. On resume the model is
told the call was interrupted and may call it again, with a new call id. So the key is not the
call id: it is derived from the first call's id and handed on, once, to the next call of the
same tool with the same arguments after an interrupted result (one the runtime marked so:
`interrupted.is_interrupted_result`). A side-effecting tool records `ctx.idempotency_key` with its
effect and skips an effect whose key it already holds.

Everything is derived from the stored history, so a call interrupted twice keeps the key of the
first attempt. A call made twice in a healthy run gets two keys — also when the server gives
both the same id (`call_0` every turn: some local servers, and any that sends none): the n-th
call with an id is keyed with n as well. A call interrupted after a compaction, whose id was
used before it, may then get another key on resume (the compacted history counts fewer uses).
"""

from __future__ import annotations

import hashlib

from loopwright.interrupted import is_interrupted_result
from loopwright.messages import Message, ToolCall, call_signature

KEY_CHARS = 32


class IdempotencyKeys:
    """The keys of one session's calls, from its history (read once, then kept up to date)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope  # the session id (or the run id of a run without a session)
        self._keys: dict[str, str] = {}  # call id → key of the newest call with it
        self._calls: dict[str, ToolCall] = {}  # call id → the newest call with it
        self._uses: dict[str, int] = {}  # call id → calls seen with it
        self._reopened: dict[str, list[str]] = {}  # signature → keys of interrupted calls
        self._seen = 0  # messages of the history already read
        self._last: Message | None = None  # the last of them

    def key_for(self, call: ToolCall, history: list[Message]) -> str:
        """The key of `call` (a call of the last reply of `history`)."""
        self._read(history)
        if self._calls.get(call.id) == call:  # noted with the reply (or a copy of it)
            return self._keys[call.id]
        return self._add(call)

    def _read(self, history: list[Message]) -> None:
        start = self._seen
        if start > len(history) or (start and history[start - 1] is not self._last):
            start = _read_from(history, self._last)  # compaction replaced it: the keys stay
        for message in history[start:]:
            self._note(message)
        self._seen = len(history)
        self._last = history[-1] if history else None

    def _note(self, message: Message) -> None:
        if message.role == "assistant":
            for call in message.tool_calls:
                if self._calls.get(call.id) is not call:
                    self._add(call)
        elif is_interrupted_result(message):
            cut = self._calls.get(message.tool_call_id or "")
            if cut is not None:
                self._reopened.setdefault(call_signature(cut), []).append(self._keys[cut.id])

    def _add(self, call: ToolCall) -> str:
        uses = self._uses.get(call.id, 0)
        self._uses[call.id] = uses + 1
        waiting = self._reopened.get(call_signature(call))
        key = waiting.pop(0) if waiting else _new_key(self.scope, call.id, uses)
        self._keys[call.id] = key
        self._calls[call.id] = call
        return key


def _read_from(history: list[Message], last: Message | None) -> int:
    """Where the unread part of a replaced history begins: after the last message read, when
    it was kept (compaction keeps the newest messages as they are), else at the newest reply."""
    for index in range(len(history) - 1, -1, -1):
        if history[index] is last:
            return index + 1
    replies = [n for n, message in enumerate(history) if message.role == "assistant"]
    return replies[-1] if replies else len(history)


def _new_key(scope: str, call_id: str, uses: int) -> str:
    # the first call with an id has the key it always had (keys already stored stay valid)
    text = f"{scope}\0{call_id}" if not uses else f"{scope}\0{call_id}\0{uses}"
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_CHARS]
