"""Idempotency keys: one per tool call, kept by a call the model makes again after a crash.

A crash can stop a call after its effect and before its result was stored. On resume the model is
told the call was interrupted and may call it again, with a new call id. So the key is not the
call id: it is derived from the first call's id and handed on, once, to the next call of the
same tool with the same arguments after an interrupted result (one the runtime marked so:
`interrupted.is_interrupted_result`). A side-effecting tool records `ctx.idempotency_key` with its
effect and skips an effect whose key it already holds.

Everything is derived from the history, so a call interrupted twice keeps the key of the first
attempt. A call made twice in a healthy run gets two keys — also when the server gives both the
same id (`call_0` every turn: some local servers, and any that sends none): the n-th call with an
id, a tool and arguments is keyed with n as well. A call is counted only with calls like it, so a
compaction that summarises other calls with its id away leaves its key as it was; one after which
the history holds fewer calls with its id, tool and arguments may give it another key on resume.

A key follows its call into another session (a history passed on with `history=`, loaded from
another session, exported and read back): the note a resumed run gives a cut call is marked
with the scope its key was made in (`scope_mark`), so a session the history moves to keys the
cut call, and the call made again, as the session that made it did. Every other call is keyed
in the scope of the session it is read in: two sessions that start from one history keep apart
the keys of the calls each makes. A key covers the call's tool and arguments too, so a note
forged in a history can hand on a key only to the very call it was made for.
"""

from __future__ import annotations

import hashlib

from loopwright.interrupted import is_interrupted_result
from loopwright.messages import Message, ToolCall, call_signature

KEY_CHARS = 32
SCOPE_MARK = "key_scope:"
"""How the `Message.marks` entry of an interrupted call's note begins that names its key's scope."""


def scope_token(scope: str) -> str:
    """What stands for `scope` (a session or run id) in keys and marks: the id is not shown."""
    return _digest(f"loopwright key scope\0{scope}")


def scope_mark(scope: str) -> str:
    """The mark of the note a run in `scope` gives a call a crash cut off (see the module)."""
    return SCOPE_MARK + scope_token(scope)


def _marked_scope(message: Message) -> str | None:
    """The scope token a note is marked with, when it has one of that form."""
    for mark in message.marks:
        if mark.startswith(SCOPE_MARK):
            token = mark[len(SCOPE_MARK):]
            if len(token) == KEY_CHARS and all(c in "0123456789abcdef" for c in token):
                return token
    return None


class IdempotencyKeys:
    """The keys of one session's calls, from its history (read once, then kept up to date)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope  # the session id (or the run id of a run without a session)
        self._token = scope_token(scope)
        self._keys: dict[str, str] = {}  # call id → key of the newest call with it
        self._calls: dict[str, ToolCall] = {}  # call id → the newest call with it
        self._uses: dict[tuple[str, str], int] = {}  # (call id, signature) → calls seen
        self._fresh: dict[str, int] = {}  # call id → n, when its newest call's key is its own
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
                signature = call_signature(cut)
                token, uses = _marked_scope(message), self._fresh.get(cut.id)
                if token is not None and uses is not None:  # keyed where it was made
                    self._keys[cut.id] = _new_key(token, cut.id, uses, signature)
                self._reopened.setdefault(signature, []).append(self._keys[cut.id])

    def _add(self, call: ToolCall) -> str:
        signature = call_signature(call)
        uses = self._uses.get((call.id, signature), 0)
        self._uses[call.id, signature] = uses + 1
        waiting = self._reopened.get(signature)
        if waiting:
            key = waiting.pop(0)
            self._fresh.pop(call.id, None)
        else:
            key = _new_key(self._token, call.id, uses, signature)
            self._fresh[call.id] = uses
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


def _new_key(token: str, call_id: str, uses: int, signature: str) -> str:
    return _digest(f"{token}\0{call_id}\0{uses}\0{signature}")


def _digest(text: str) -> str:
    # BLAKE2b hashes a key's text (~90 bytes: two SHA-256 blocks, one BLAKE2b block) in a
    # quarter of SHA-256's instructions: ~4 k fewer a tool call under callgrind
    return hashlib.blake2b(text.encode(), digest_size=KEY_CHARS // 2).hexdigest()
