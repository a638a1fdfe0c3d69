"""Turn diffs: what the file tools changed, shown after each turn and accumulated on the result.

File tools call `snapshot_before_write()` before they touch a file; the first snapshot of a file in
a turn (and in the run) keeps its original content. `TurnDiffPlugin` notices when a turn's tool
batch is complete, emits a `status` event of kind `turn_diff` with the unified diff, and puts the
run's accumulated diff on `RunResult.diff`. Files a `bash` command changed in the workspace come
in the same way (`loopwright.builtin.workspace_scan` compares the workspace before and after the
command and hands over the originals with `record_original()`); a file whose original content was
not kept (big or binary) is reported as changed, without lines.
"""

from __future__ import annotations

import asyncio
import difflib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.plugins import LoopPlugin
from loopwright.tools.base import ToolContext

if TYPE_CHECKING:
    from loopwright.plugins import RunView
    from loopwright.result import RunResult

STATE_KEY = "file_snapshots"
_MAX_DIFF_BYTES = 2_000_000  # files larger than this are reported as changed, not diffed


@dataclass(frozen=True, kw_only=True)
class Unkept:
    """A file whose content was not kept (too big to diff, or binary): its size and mtime
    still tell whether it changed."""

    size: int
    mtime_ns: int


@dataclass(frozen=True, kw_only=True)
class Link:
    """A symlink, shown by where it points: never read through, since a sandboxed command may
    point one at a file it cannot read itself (`~/.ssh/id_rsa`) for loopwright to read."""

    target: str


Original = bytes | Unkept | Link | None
"""A file's content before a change: bytes, `Unkept`, `Link`, or None when it did not exist."""


@dataclass(kw_only=True)
class Snapshots:
    """Original contents (None = did not exist) per absolute path, for the turn and the run."""

    workdir: Path
    turn: dict[str, Original] = field(default_factory=dict)
    run: dict[str, Original] = field(default_factory=dict)


@dataclass(kw_only=True, frozen=True)
class DiffSummary:
    """A unified diff and its size."""

    diff: str
    files: list[str]
    added: int
    removed: int


def snapshot_before_write(ctx: ToolContext, path: Path) -> None:
    """Remember `path`'s content before its first change in this turn (and in this run)."""
    if str(path) not in _snapshots(ctx).turn:
        record_original(ctx, path, read_side(path))


def record_original(ctx: ToolContext, path: Path, original: Original) -> None:
    """`original` is what `path` held before a change made in this turn; the first one recorded
    in a turn (and in the run) is the one kept."""
    snapshots = _snapshots(ctx)
    key = str(path)
    snapshots.turn.setdefault(key, original)
    snapshots.run.setdefault(key, original)


def _snapshots(ctx: ToolContext) -> Snapshots:
    snapshots = ctx.state.get(STATE_KEY)
    if not isinstance(snapshots, Snapshots):
        snapshots = Snapshots(workdir=Path(ctx.workdir).resolve())
        ctx.state[STATE_KEY] = snapshots
    return snapshots


def diff_against(originals: dict[str, Original], workdir: Path) -> DiffSummary:
    """The unified diff from `originals` to what is on disk now (unchanged files left out)."""
    chunks: list[str] = []
    files: list[str] = []
    added = removed = 0
    for key in sorted(originals):
        before, after = originals[key], read_side(Path(key))
        if before == after:
            continue
        name = _relative(Path(key), workdir)
        files.append(name)
        text, plus, minus = _file_diff(name, before, after)
        chunks.append(text)
        added += plus
        removed += minus
    return DiffSummary(diff="".join(chunks), files=files, added=added, removed=removed)


def proposed_diff(ctx: ToolContext, path: Path, after: bytes | None) -> str:
    """The unified diff from `path` as it is now to `after` (None: deleted), for an approval
    prompt to show before a file tool changes it; "" when nothing would change. Blocks: call it
    in a worker thread."""
    before = read_side(path)
    if before == after:
        return ""
    return _file_diff(_relative(path, Path(ctx.workdir).resolve()), before, after)[0]


class TurnDiffPlugin(LoopPlugin):
    """Emits a `turn_diff` status after every tool batch that changed files; fills `RunResult.diff`.

    The files are read and diffed in a worker thread, once the batch is complete (`after_tools`,
    before the turn's `turn_end`): a diff of many or large files must not hold the event loop."""

    async def after_tools(self, run: RunView) -> None:
        snapshots = run.tool_state.get(STATE_KEY)
        if not isinstance(snapshots, Snapshots) or not snapshots.turn:
            return
        turn = dict(snapshots.turn)
        snapshots.turn.clear()
        summary = await asyncio.to_thread(diff_against, turn, snapshots.workdir)
        if not summary.files:
            return
        count = len(summary.files)
        noun = "file" if count == 1 else "files"
        data: dict[str, Any] = {"diff": summary.diff, "files": summary.files,
                                "added": summary.added, "removed": summary.removed}
        sizes = f"+{summary.added}/−{summary.removed}"
        run.status("turn_diff", f"turn changed {count} {noun} ({sizes})", data)

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        snapshots = run.tool_state.get(STATE_KEY)
        if isinstance(snapshots, Snapshots) and snapshots.run:
            whole = await asyncio.to_thread(diff_against, dict(snapshots.run), snapshots.workdir)
            result.diff = whole.diff


def _file_diff(name: str, before: Original, after: Original) -> tuple[str, int, int]:
    old_label = f"a/{name}" if before is not None else "/dev/null"
    new_label = f"b/{name}" if after is not None else "/dev/null"
    if isinstance(before, Link) or isinstance(after, Link):
        return "".join(f"{label} is a symlink to {side.target}\n" for label, side in
                       ((old_label, before), (new_label, after)) if isinstance(side, Link)), 0, 0
    if isinstance(before, Unkept) or isinstance(after, Unkept):
        return f"Files {old_label} and {new_label} differ (too large or binary to diff)\n", 0, 0
    old_text, new_text = _as_text(before), _as_text(after)
    if old_text is None or new_text is None:
        return f"Binary files {old_label} and {new_label} differ\n", 0, 0
    lines = list(difflib.unified_diff(old_text.splitlines(keepends=True),
                                      new_text.splitlines(keepends=True),
                                      fromfile=old_label, tofile=new_label))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    return text, added, removed


def _as_text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    if len(data) > _MAX_DIFF_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_side(path: Path, limit: int = _MAX_DIFF_BYTES) -> Original:
    """What `path` (absolute, resolved) holds: its bytes, `Unkept` past `limit` bytes, a `Link`
    for a symlink, None for anything else. For the host reading what a sandboxed command may
    have left (a change's sides, grep's Python engine): no link is followed — neither the last
    component (`O_NOFOLLOW`) nor a directory on the way (the file opened must be at `path`
    itself) — and a named pipe, which would wait for a writer, is not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return _link(path) if exc.errno == errno.ELOOP else None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _opened_at(fd, path):
            return None
        if info.st_size > limit:  # never read whole
            return Unkept(size=info.st_size, mtime_ns=info.st_mtime_ns)
        content = handle.read(limit + 1)
    if len(content) > limit:  # grew while read
        return Unkept(size=len(content), mtime_ns=info.st_mtime_ns)
    return content


def _link(path: Path) -> Link | None:
    try:
        return Link(target=os.readlink(path)) if _parent_is_real(path) else None
    except OSError:
        return None


def _opened_at(fd: int, path: Path) -> bool:
    """Whether the file open at `fd` is `path` itself (an absolute, resolved path), not one a
    directory swapped for a symlink on its way leads to."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == str(path)
    except OSError:  # no /proc (macOS): every directory on the way must still be one
        return _parent_is_real(path)


def _parent_is_real(path: Path) -> bool:
    return os.path.realpath(path.parent) == str(path.parent)


def _relative(path: Path, workdir: Path) -> str:
    try:
        return str(path.relative_to(workdir))
    except ValueError:
        return str(path)
