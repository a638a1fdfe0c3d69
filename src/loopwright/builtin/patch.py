"""`apply_patch`: apply a unified diff across one or more files, atomically.

Every hunk of every file is applied in memory first; only when all of them fit are the files
written, and if a write fails the files already written are restored. Hunks are located by their
content (searching outward from the line number the header gives), so slightly wrong line numbers
and hunk counts, which models often produce, do not matter; trailing whitespace differences are
tolerated as a second try.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopwright.builtin.diff import proposed_diff, snapshot_before_write
from loopwright.builtin.files import ensure_not_stale, write_atomically
from loopwright.builtin.workspace import (
    display_path,
    read_checked,
    require_secret_approval,
    resolve_path,
    workspace_roots,
)
from loopwright.context.reminders import note_file_read
from loopwright.errors import ToolError
from loopwright.safety.sensitive import is_secret_path, require_write_approval
from loopwright.tools.base import ToolContext, tool
from loopwright.tools.effects import will_write

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"


@dataclass(kw_only=True)
class Hunk:
    """One `@@` block: the old lines it expects and the new lines it leaves."""

    old_start: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    old_missing_newline: bool = False
    new_missing_newline: bool = False


@dataclass(kw_only=True)
class FilePatch:
    """The hunks for one file; `old_path`/`new_path` are None for /dev/null (create / delete)."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)


@tool(core=True, tags={"files"})
async def apply_patch(patch: str, ctx: ToolContext) -> str:
    """Apply a unified diff (as `diff -u` or `git diff` print it) to one or more files. All hunks
    of all files apply, or nothing changes. Use `--- /dev/null` to create a file and
    `+++ /dev/null` to delete one. Paths are relative to the working directory (a/ b/ prefixes
    are stripped).

    Args:
        patch: The unified diff text.
    """
    file_patches = parse_patch(patch)
    planned: list[tuple[Path, bytes | None]] = []
    for file_patch in file_patches:
        planned.append(await _plan_file(ctx, file_patch))
    await will_write(ctx, planned)
    written: list[tuple[Path, bytes | None]] = []
    roots = workspace_roots(ctx)
    try:
        for target, content in planned:
            original = read_checked(target, roots) if target.exists() else None
            snapshot_before_write(ctx, target)
            if content is None:
                target.unlink()
            else:
                write_atomically(target, content, roots)
            written.append((target, original))
    except (OSError, ToolError) as exc:
        _restore(written)
        raise ToolError(f"writing the patched files failed ({exc}); nothing was changed.") from exc
    summary: list[str] = []
    for target, content in planned:
        if content is None:
            summary.append(f"deleted {display_path(ctx, target)}")
        else:
            note_file_read(ctx, target)
            summary.append(f"patched {display_path(ctx, target)}")
    return f"Applied the patch to {len(planned)} file(s): " + ", ".join(summary) + "."


async def _plan_file(ctx: ToolContext, file_patch: FilePatch) -> tuple[Path, bytes | None]:
    """The target path and its new content (None = delete), or `ToolError` naming the hunk."""
    raw_path = file_patch.new_path or file_patch.old_path
    assert raw_path is not None  # the parser rejects a patch with both sides /dev/null
    target = resolve_path(ctx, raw_path)
    await require_write_approval(ctx, target, verb="patch",
                                 preview=lambda: asyncio.to_thread(_file_preview, ctx, file_patch))
    if file_patch.old_path is not None and target.is_file():
        await require_secret_approval(ctx, target, verb="patch")
        ensure_not_stale(ctx, target)
    return target, _patched_content(ctx, file_patch, target)


def _patched_content(ctx: ToolContext, file_patch: FilePatch, target: Path) -> bytes | None:
    """What `file_patch` makes of `target` (None = delete it), or `ToolError` saying why not."""
    shown = display_path(ctx, target)
    if file_patch.old_path is None:
        if target.exists() and target.stat().st_size > 0:
            raise ToolError(f"the patch creates {shown}, but it already exists; nothing changed.")
        lines = [line for hunk in file_patch.hunks for line in hunk.new]
        missing = any(h.new_missing_newline for h in file_patch.hunks)
        return _join(lines, "\n", trailing_newline=not missing and bool(lines))
    if not target.is_file():
        raise ToolError(f"the patch changes {shown}, which does not exist; nothing changed.")
    if file_patch.new_path is None:
        return None
    try:
        text = read_checked(target, workspace_roots(ctx)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{shown} is not UTF-8 text; nothing changed.") from exc
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    trailing = text.endswith(newline)
    if trailing:
        lines.pop()
    for number, hunk in enumerate(file_patch.hunks, start=1):
        lines, trailing = _apply_hunk(lines, trailing, hunk, f"hunk {number} of {shown}")
    return _join(lines, newline, trailing_newline=trailing and bool(lines))


def _file_preview(ctx: ToolContext, file_patch: FilePatch) -> str:
    """The diff `file_patch` would make, for an approval prompt ("" when it would fail, and for
    a secrets file, whose content is not shown before reading it is approved)."""
    raw_path = file_patch.new_path or file_patch.old_path
    try:
        target = resolve_path(ctx, raw_path or "")
        if is_secret_path(target):
            return ""
        return proposed_diff(ctx, target, _patched_content(ctx, file_patch, target))
    except (OSError, ToolError):
        return ""


async def _preview_patch(arguments: dict[str, Any], ctx: ToolContext) -> str:
    try:
        file_patches = parse_patch(str(arguments.get("patch", "")))
    except ToolError:
        return ""
    return await asyncio.to_thread(
        lambda: "".join(_file_preview(ctx, file_patch) for file_patch in file_patches))


apply_patch.preview = _preview_patch


def _apply_hunk(lines: list[str], trailing: bool, hunk: Hunk, label: str
                ) -> tuple[list[str], bool]:
    at = _locate(lines, hunk.old, hunk.old_start - 1)
    if at is None:
        expected = "\n".join(f"    {line}" for line in hunk.old[:12]) or "    (nothing)"
        raise ToolError(f"{label} does not apply: these lines were not found near line "
                        f"{hunk.old_start}:\n{expected}\nRead the file again and regenerate the "
                        "patch; nothing was changed.")
    result = lines[:at] + hunk.new + lines[at + len(hunk.old):]
    touches_end = at + len(hunk.old) == len(lines)
    if touches_end and hunk.new_missing_newline:
        trailing = False
    elif touches_end and hunk.old_missing_newline:
        trailing = True
    return result, trailing


def _locate(lines: list[str], old: list[str], hint: int) -> int | None:
    """Where `old` occurs in `lines`, the occurrence nearest `hint` first; exact, then ignoring
    trailing whitespace."""
    if not old:
        return min(max(hint + 1, 0), len(lines)) if hint >= 0 else 0
    last = len(lines) - len(old)
    if last < 0:
        return None
    hint = min(max(hint, 0), last)
    order = sorted(range(last + 1), key=lambda i: (abs(i - hint), i))
    for same in (_same_exact, _same_loose):
        for start in order:
            if same(lines, old, start):
                return start
    return None


def _same_exact(lines: list[str], old: list[str], start: int) -> bool:
    return lines[start:start + len(old)] == old


def _same_loose(lines: list[str], old: list[str], start: int) -> bool:
    return all(a.rstrip() == b.rstrip() for a, b in zip(lines[start:start + len(old)], old,
                                                         strict=True))


def _join(lines: list[str], newline: str, *, trailing_newline: bool) -> bytes:
    text = newline.join(lines) + (newline if trailing_newline else "")
    return text.encode("utf-8")


def _restore(written: list[tuple[Path, bytes | None]]) -> None:
    for target, original in reversed(written):
        try:
            if original is None:
                target.unlink(missing_ok=True)
            else:
                write_atomically(target, original)
        except OSError:
            continue  # best effort: the error we raise names the failure


# --- parsing -------------------------------------------------------------------------------------


def parse_patch(patch: str) -> list[FilePatch]:
    """The file patches in a unified diff; `ToolError` with a precise reason if it is malformed."""
    lines = patch.replace("\r\n", "\n").split("\n")
    files: list[FilePatch] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _is_file_header(lines, index):
            current = FilePatch(old_path=_header_path(line[4:]),
                                new_path=_header_path(lines[index + 1][4:]))
            if current.old_path is None and current.new_path is None:
                raise ToolError("a file header has /dev/null on both sides.")
            files.append(current)
            index += 2
            continue
        header = _HUNK_HEADER.match(line)
        if header:
            if not files:
                raise ToolError("the patch has a hunk before any '--- a/path' / '+++ b/path' "
                                "file header.")
            hunk = Hunk(old_start=int(header.group(1)))
            index = _read_hunk(lines, index + 1, hunk)
            files[-1].hunks.append(hunk)
            continue
        index += 1  # `diff --git`, `index …`, mode lines and prose between files
    if not files:
        raise ToolError("no file headers found: a unified diff needs '--- a/path' and "
                        "'+++ b/path' lines followed by '@@ -l,n +l,n @@' hunks.")
    for file_patch in files:
        if not file_patch.hunks and file_patch.new_path is not None:
            raise ToolError(f"the patch for {file_patch.new_path} has no hunks.")
    return files


def _read_hunk(lines: list[str], index: int, hunk: Hunk) -> int:
    """Fill `hunk` from `lines[index:]`; return the index of the first line after it."""
    last_side = ""
    while index < len(lines):
        line = lines[index]
        if line.startswith(("@@", "diff --git")) or _is_file_header(lines, index):
            break
        if line.startswith(_NO_NEWLINE[:12]):
            if last_side in (" ", "+"):
                hunk.new_missing_newline = True
            if last_side in (" ", "-"):
                hunk.old_missing_newline = True
        elif line.startswith("+"):
            hunk.new.append(line[1:])
        elif line.startswith("-"):
            hunk.old.append(line[1:])
        elif line.startswith(" ") or (line == "" and _body_follows(lines, index + 1)):
            # A blank line with no leading space is a context line models often emit.
            hunk.old.append(line[1:])
            hunk.new.append(line[1:])
        else:
            break
        if not line.startswith("\\"):
            last_side = line[:1] or " "
        index += 1
    return index


def _is_file_header(lines: list[str], index: int) -> bool:
    """`--- old` then `+++ new` then a hunk header: a removed line starting with `-- ` followed by
    an added one starting with `++ ` is not mistaken for a header."""
    return (index + 2 < len(lines) and lines[index].startswith("--- ")
            and lines[index + 1].startswith("+++ ") and lines[index + 2].startswith("@@"))


def _body_follows(lines: list[str], index: int) -> bool:
    while index < len(lines) and lines[index] == "":
        index += 1
    if index >= len(lines) or _is_file_header(lines, index):
        return False
    return lines[index][:1] in (" ", "+", "-", "\\")


def _header_path(raw: str) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path
