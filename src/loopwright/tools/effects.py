"""What a file-changing call is about to write, recorded before it writes, so a run resumed after
a crash cut the call off can tell the model whether it took effect.

The built-in tools that change files (`write_file`, `edit_file`, `apply_patch`) call
`will_write(ctx, changes)` once they know every file's new bytes: each path with the SHA-256 of
what it holds now and of what it will hold (None: absent). The session recorder makes that
durable before the write (`ToolContext.record_effect`), with the call's idempotency key, which
tells it from other calls with the same id. On resume, `cut_call_notes` finds each cut call's
record and `effect_note` compares the files as they are with both digests. A tool that records
nothing (`bash`, most tools) gets the note that its effect is unknown
(`interrupted.INTERRUPTED_RESULT`). The notes' texts are registered in `notes.py`.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import notes
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.messages import Message, ToolCall
from loopwright.tools.idempotency import IdempotencyKeys

if TYPE_CHECKING:
    from loopwright.tools.base import ToolContext

EFFECT_EVENT = "tool_effect"  # the type of the stored event row holding the record


_CHUNK = 1 << 20  # a file is hashed a piece at a time: memory stays flat however large it is
_DIGEST_CHARS = 64  # a SHA-256 in hex
_PATH_MAX = 4096
# what a path holds that is not a regular file (a directory, a pipe, a device, a symlink put
# there since): matches no recorded digest, as no SHA-256 in hex has this form
_NOT_A_FILE = "not a regular file"


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


class _CannotCheck(Exception):
    """What a path holds cannot be read (no permission, an I/O error)."""


def file_digest(path: Path) -> str | None:
    """Blocking (disk): the digest of what `path` holds, None when it is absent. A path that is
    not a regular file (a symlink at its end included: never followed) is `_NOT_A_FILE`, and
    is never opened for reading long enough to block (a pipe) or to read without end (a
    device)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(
        os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink where the file was
            return _NOT_A_FILE
        raise _CannotCheck(str(exc)) from None
    with open(fd, "rb", buffering=0) as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return _NOT_A_FILE
        hashed = hashlib.sha256()
        try:
            while chunk := file.read(_CHUNK):
                hashed.update(chunk)
        except OSError as exc:
            raise _CannotCheck(str(exc)) from None
        return hashed.hexdigest()


async def will_write(ctx: ToolContext, changes: Sequence[tuple[Path, bytes | None]]) -> None:
    """Record, durably when the run has a session, that each path is about to hold its bytes
    (None: to be deleted). Call it after every check passed, right before the first write."""
    if ctx.record_effect is None:
        return

    def files() -> list[dict[str, Any]]:
        return [{"path": str(path), "before": _digest_or_unknown(path), "after": digest(data)}
                for path, data in changes]

    await ctx.record_effect({"files": await asyncio.to_thread(files)})


def _digest_or_unknown(path: Path) -> str | None:
    try:
        return file_digest(path)
    except _CannotCheck:
        return _NOT_A_FILE  # what it held is unknown: a resumed run finds it "changed since"


def effect_note(record: Any, workdir: Path | None) -> str:
    """Blocking (disk): the note for an interrupted call, from its effect record (None: it
    recorded none, so nobody knows). The record comes from the store, so it is checked before
    it is believed: a record of another shape says nothing, and a path is read only inside
    `workdir` (the resumed run's), with no symlink on the way."""
    entries = _checked_entries(record)
    if entries is None or workdir is None:
        return INTERRUPTED_RESULT
    workspace = workdir.resolve()
    took, untouched, other, unchecked = [], [], [], []
    for path, before, after in entries:
        shown = (str(path.relative_to(workspace)) if path.is_relative_to(workspace)
                 else "a path outside the workspace")
        try:
            now = _now_in(workspace, path)
        except _CannotCheck:
            unchecked.append(shown)
            continue
        if now == after:
            took.append(shown)
        elif now == before:
            untouched.append(shown)
        else:
            other.append(shown)
    if not took and not untouched and not other:
        return INTERRUPTED_RESULT
    if took and not untouched and not other and not unchecked:
        return notes.render(notes.TOOK_EFFECT, paths=_listed(took))
    if untouched and not took and not other and not unchecked:
        return notes.render(notes.NO_EFFECT, paths=_listed(untouched))
    parts = [f"{label}: {_listed(paths)}" for label, paths in (
        ("written as it meant", took), ("not written", untouched),
        ("changed since by something else", other),
        ("not checked (unreadable, or outside the workspace)", unchecked)) if paths]
    return notes.render(notes.PART_EFFECT, parts="; ".join(parts))


def cut_call_notes(history: list[Message], cut: list[ToolCall], records: list[dict[str, Any]],
                   scope: str, workdir: Path | None) -> dict[int, str]:
    """Blocking (disk): the note for each call of `cut` (calls of `history` a crash cut off), by
    the call's `id()`, from the effect record made for it: the one with its idempotency key
    (`scope`: the session's), or, for a record stored before records held keys, the one with its
    call id when no other call of `history` has that id. Another call's record, one with the
    same id included, never speaks for it."""
    keys = IdempotencyKeys(scope)
    by_key = {r["key"]: r for r in records if isinstance(r.get("key"), str)}
    keyless = {str(r.get("id")): r for r in records if "key" not in r}
    uses = Counter(call.id for m in history if m.role == "assistant" for call in m.tool_calls)
    wanted = {id(call) for call in cut}
    found: dict[int, str] = {}
    for n, message in enumerate(history):
        for call in message.tool_calls if message.role == "assistant" else ():
            if id(call) in wanted:
                record = by_key.get(keys.key_for(call, history[:n + 1]))
                if record is None and uses[call.id] == 1:
                    record = keyless.get(call.id)
                found[id(call)] = effect_note(record, workdir)
    return found


def _checked_entries(record: Any) -> list[tuple[Path, str | None, str | None]] | None:
    """(path, before, after) of each file of `record`, or None when it is not what `will_write`
    records: a list of files, each an absolute, normal path and two digests (or nulls)."""
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, list) or not files:
        return None
    entries = []
    for entry in files:
        if not isinstance(entry, dict):
            return None
        path, before, after = entry.get("path"), entry.get("before"), entry.get("after")
        if not (isinstance(path, str) and _is_plain_path(path) and _is_digest(before)
                and _is_digest(after)):
            return None
        entries.append((Path(path), before, after))
    return entries


def _is_plain_path(path: str) -> bool:
    return (0 < len(path) <= _PATH_MAX and "\0" not in path and os.path.isabs(path)
            and os.path.normpath(path) == path)


def _is_digest(value: Any) -> bool:
    return value is None or (isinstance(value, str) and len(value) == _DIGEST_CHARS
                             and all(c in "0123456789abcdef" for c in value))


def _now_in(workspace: Path, path: Path) -> str | None:
    """What `path` holds now (`file_digest`), when it is inside `workspace` and no directory on
    the way is a symlink; `_CannotCheck` otherwise."""
    if path == workspace or not path.is_relative_to(workspace):
        raise _CannotCheck("outside the workspace")
    if os.path.realpath(path.parent) != str(path.parent):
        return _NOT_A_FILE  # a directory on the way was swapped for a symlink
    return file_digest(path)


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
