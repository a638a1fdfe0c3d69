"""Which files a `bash` command changed in the workspace: a cheap scan before and after it.

A scan records each file's size and mtime, and the content of small text files, so a change
can be shown as a unified diff (`loopwright.builtin.diff` makes the text and reports it with
the file tools' changes). Scans are bounded (`ScanLimits`): directories that are not the
project's own files (`.git`, `node_modules`, virtual environments, caches) are skipped, big or
binary files are tracked by size and mtime alone, and a workspace with too many files, or one
too slow to walk, is not tracked at all — the run says so once, in one line. Content kept by
one scan is reused by the next when the file's size and mtime did not change, so a run of many
commands reads each file about once. Everything here blocks: call it in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from loopwright.builtin.diff import Link, Unkept, read_side, record_original

if TYPE_CHECKING:
    from loopwright.tools.base import ToolContext

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".cache",
})
"""Directory names never scanned: version control, dependencies and caches, not the project's
own files (and often most of a workspace's size)."""
STATE_KEY = "workspace_scan"  # the latest scan of this run, reused by the next
UNTRACKED_KEY = "workspace_untracked"  # over the limits once: not scanned again in this run


@dataclass(frozen=True, kw_only=True)
class ScanLimits:
    """How much one scan may cost before it gives up or stops keeping content."""

    max_files: int = 20_000  # more files than this: the workspace is not tracked
    max_seconds: float = 2.0  # a walk slower than this (a network mount, …): not tracked
    max_file_bytes: int = 256 * 1024  # bigger files: size and mtime only
    max_total_bytes: int = 16 * 1024 * 1024  # content kept across all files
    max_changed_files: int = 100  # a command changing more: diffs for this many, then a count


LIMITS = ScanLimits()
"""The limits of the scans around `bash` commands."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One file as a scan saw it; `content` is None when it was not kept (big, binary, over
    the total), a `Link` for a symlink."""

    size: int
    mtime_ns: int
    content: bytes | Link | None = None


@dataclass(kw_only=True)
class Scan:
    """The files under `root` (absolute paths), or why they could not all be seen."""

    root: Path
    ignored: frozenset[str] = frozenset()
    entries: dict[str, Entry] = field(default_factory=dict)
    overflow: str | None = None  # set when the scan gave up: nothing can be compared


@dataclass(frozen=True, kw_only=True)
class Changes:
    created: list[str]
    deleted: list[str]
    modified: list[str]


def scan_workspace(root: Path, *, previous: Scan | None = None,
                   limits: ScanLimits = ScanLimits(), ignored: frozenset[str] = frozenset()
                   ) -> Scan:
    """Walk `root` (symlinks are not followed) within `limits`, leaving out the `ignored`
    absolute paths (files or directories); content that `previous` kept is reused for files
    whose size and mtime are unchanged."""
    scan = Scan(root=root, ignored=ignored)
    reusable = previous.entries if previous is not None and previous.root == root else {}
    deadline = time.monotonic() + limits.max_seconds
    budget = limits.max_total_bytes
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                found = list(listing)
        except OSError:
            continue  # unreadable directories are not the command's doing
        for item in found:
            if item.path in ignored:
                continue
            if len(scan.entries) >= limits.max_files:
                scan.overflow = f"the workspace has more than {limits.max_files:,} files"
                return scan
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if item.name not in SKIPPED_DIRS:
                    pending.append(Path(item.path))
                continue
            entry = _entry(item.path, info, reusable.get(item.path), limits, budget)
            budget -= len(entry.content) if isinstance(entry.content, bytes) else 0
            scan.entries[item.path] = entry
        if time.monotonic() > deadline:
            scan.overflow = f"scanning the workspace took over {limits.max_seconds:g}s"
            return scan
    return scan


def compare(before: Scan, after: Scan) -> Changes:
    """Paths created, deleted and modified (size or mtime changed) between two scans."""
    old, new = before.entries, after.entries
    return Changes(
        created=sorted(path for path in new if path not in old),
        deleted=sorted(path for path in old if path not in new),
        modified=sorted(path for path, entry in new.items()
                        if path in old and (old[path].size, old[path].mtime_ns)
                        != (entry.size, entry.mtime_ns)),
    )


def _entry(path: str, info: os.stat_result, earlier: Entry | None, limits: ScanLimits,
           budget: int) -> Entry:
    size, mtime = info.st_size, info.st_mtime_ns
    if (earlier is not None and (earlier.size, earlier.mtime_ns) == (size, mtime)
            and (not isinstance(earlier.content, bytes) or len(earlier.content) <= budget)):
        return earlier
    if stat.S_ISLNK(info.st_mode):
        link = read_side(Path(path))
        return Entry(size=size, mtime_ns=mtime, content=link if isinstance(link, Link) else None)
    if not stat.S_ISREG(info.st_mode) or size > min(limits.max_file_bytes, budget):
        return Entry(size=size, mtime_ns=mtime)
    content = read_side(Path(path), limits.max_file_bytes)  # a link swapped in is not followed
    if not isinstance(content, bytes) or b"\0" in content[:8192]:
        return Entry(size=size, mtime_ns=mtime)  # grew while read, swapped, or binary
    return Entry(size=size, mtime_ns=mtime, content=content)


# --- around one bash command ---------------------------------------------------------------------


async def scan_before_command(ctx: ToolContext) -> Scan | None:
    """The workspace as it is before a command (in a worker thread), or None when it is not
    tracked (over the limits: a one-line status note, and no more scans in this run)."""
    if ctx.state.get(UNTRACKED_KEY):
        return None
    previous = ctx.state.get(STATE_KEY)

    def scan_now() -> Scan:  # resolving paths touches the disk too
        return scan_workspace(Path(ctx.workdir).resolve(), limits=LIMITS,
                              previous=previous if isinstance(previous, Scan) else None,
                              ignored=_own_files(ctx))

    scan = await asyncio.to_thread(scan_now)
    if scan.overflow is None:
        return scan
    ctx.state.pop(STATE_KEY, None)
    ctx.state[UNTRACKED_KEY] = True
    ctx.status("workspace_scan", f"{scan.overflow}, so files changed by bash are not shown as "
               "diffs", reason=scan.overflow)
    return None


async def record_command_changes(ctx: ToolContext, before: Scan) -> None:
    """Compare the workspace with `before` (in a worker thread) and hand every created, deleted
    or modified file's original to the turn diff, as the file tools do before they write."""
    after = await asyncio.to_thread(scan_workspace, before.root, previous=before, limits=LIMITS,
                                    ignored=before.ignored)
    if after.overflow is not None:
        ctx.state.pop(STATE_KEY, None)
        return
    ctx.state[STATE_KEY] = after
    changes = compare(before, after)
    changed = sorted([*changes.created, *changes.deleted, *changes.modified])
    shown = LIMITS.max_changed_files
    if len(changed) > shown:
        ctx.status("workspace_scan", f"the command changed {len(changed):,} files; diffs are "
                   f"shown for the first {shown}", files=len(changed))
    for path in changed[:shown]:
        entry = before.entries.get(path)
        if entry is None:
            record_original(ctx, Path(path), None)  # created
        else:
            record_original(ctx, Path(path), entry.content if entry.content is not None
                            else Unkept(size=entry.size, mtime_ns=entry.mtime_ns))


def _own_files(ctx: ToolContext) -> frozenset[str]:
    """What loopwright itself writes while a command runs — its data directory and the session
    database — which may lie inside the workspace and are not the command's changes."""
    from loopwright.settings import default_data_dir

    agent = ctx.services.get("agent")
    settings = getattr(agent, "settings", None)
    data_dir = getattr(settings, "data_dir", None)
    own = [Path(data_dir).expanduser() if data_dir else default_data_dir()]
    store = getattr(getattr(agent, "state_services", None), "store", None)
    database = getattr(getattr(store, "sync", store), "path", None)
    if isinstance(database, Path):
        own += [database.with_name(database.name + suffix)
                for suffix in ("", "-wal", "-shm", "-journal")]
    return frozenset(str(path.resolve()) for path in own)
