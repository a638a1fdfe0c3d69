"""Idempotency keys: one per tool call, kept by a call the model makes again after a crash.

A crash can stop a call after its effect and before its result was stored. On resume the model is
told the call was interrupted and may call it again, with a new call id. So the key is not the
call id: it is derived from the first call's id and handed on, once, to the next call of the
same tool with the same arguments after an interrupted result. A side-effecting tool records
`ctx.idempotency_key` with its effect and skips an effect whose key it already holds.

Everything is derived from the stored history, so a call interrupted twice keeps the key of the
first attempt. A call made twice in a healthy run gets two keys.
"""

from __future__ import annotations

import hashlib

from loopwright.messages import Message, ToolCall, call_signature, is_interrupted_result

KEY_CHARS = 32


class IdempotencyKeys:
    """The keys of one session's calls, from its history (read once, then kept up to date)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope  # the session id (or the run id of a run without a session)
        self._keys: dict[str, str] = {}  # call id → key
        self._calls: dict[str, ToolCall] = {}
        self._reopened: dict[str, list[str]] = {}  # signature → keys of interrupted calls
        self._seen = 0  # messages of the history already read

    def key_for(self, call: ToolCall, history: list[Message]) -> str:
        """The key of `call` (a call of the last reply of `history`)."""
        self._read(history)
        return self._key_of(call)

    def _read(self, history: list[Message]) -> None:
        if self._seen > len(history):  # compaction replaced the history: the keys stay
            self._seen = len(history)
        for message in history[self._seen:]:
            self._note(message)
        self._seen = len(history)

    def _note(self, message: Message) -> None:
        if message.role == "assistant":
            for call in message.tool_calls:
                self._key_of(call)
        elif message.role == "tool" and is_interrupted_result(message):
            cut = self._calls.get(message.tool_call_id or "")
            if cut is not None:
                self._reopened.setdefault(call_signature(cut), []).append(self._keys[cut.id])

    def _key_of(self, call: ToolCall) -> str:
        key = self._keys.get(call.id)
        if key is None:
            waiting = self._reopened.get(call_signature(call))
            key = waiting.pop(0) if waiting else _new_key(self.scope, call.id)
            self._keys[call.id] = key
            self._calls[call.id] = call
        return key


def _new_key(scope: str, call_id: str) -> str:
    digest = hashlib.sha256(f"{scope}\0{call_id}".encode()).hexdigest()
    return digest[:KEY_CHARS]
