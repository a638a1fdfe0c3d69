"""What a file-changing call is about to write, recorded before it writes, so a run resumed after
a crash cut the call off can tell the model whether it took effect.

The built-in tools that change files (`write_file`, `edit_file`, `apply_patch`) call
`will_write(ctx, changes)` once they know every file's new bytes: each path with the SHA-256 of
what it holds now and of what it will hold (None: absent). The session recorder makes that
durable before the write (`ToolContext.record_effect`). On resume, `effect_note` compares the
files as they are with both digests. A tool that records nothing (`bash`, most tools) gets the
note that its effect is unknown (`messages.INTERRUPTED_RESULT`). The notes' texts are registered in
`notes.py`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import notes
from loopwright.messages import INTERRUPTED_RESULT

if TYPE_CHECKING:
    from loopwright.tools.base import ToolContext

EFFECT_EVENT = "tool_effect"  # the type of the stored event row holding the record


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str | None:
    """Blocking (disk): the digest of what `path` holds, None when it is absent."""
    try:
        return digest(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def will_write(ctx: ToolContext, changes: Sequence[tuple[Path, bytes | None]]) -> None:
    """Record, durably when the run has a session, that each path is about to hold its bytes
    (None: to be deleted). Call it after every check passed, right before the first write."""
    if ctx.record_effect is None:
        return

    def files() -> list[dict[str, Any]]:
        return [{"path": str(path), "before": file_digest(path), "after": digest(data)}
                for path, data in changes]

    await ctx.record_effect({"files": await asyncio.to_thread(files)})


def effect_note(record: dict[str, Any] | None) -> str:
    """Blocking (disk): the note for an interrupted call, from its effect record (None: it
    recorded none, so nobody knows)."""
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, list) or not files:
        return INTERRUPTED_RESULT
    took, untouched, other = [], [], []
    for entry in files:
        path = str(entry.get("path", ""))
        now = file_digest(Path(path)) if path else "?"
        if now == entry.get("after"):
            took.append(path)
        elif now == entry.get("before"):
            untouched.append(path)
        else:
            other.append(path)
    if took and not untouched and not other:
        return notes.render(notes.TOOK_EFFECT, paths=_listed(took))
    if untouched and not took and not other:
        return notes.render(notes.NO_EFFECT, paths=_listed(untouched))
    parts = [f"{label}: {_listed(paths)}" for label, paths in (
        ("written as it meant", took), ("not written", untouched),
        ("changed since by something else", other)) if paths]
    return notes.render(notes.PART_EFFECT, parts="; ".join(parts))


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
