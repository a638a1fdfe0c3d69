"""File tools: `read_file`, `write_file`, `edit_file`.

Every path goes through the workspace boundary (`workspace.resolve_path`). Reads are stamped with
the file's mtime in `ctx.state["read_files"]` so that an edit can refuse to overwrite a file that
changed on disk since the model last saw it. Writes snapshot the original first, for turn diffs.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from loopwright.builtin.diff import proposed_diff, snapshot_before_write
from loopwright.builtin.editor import editor_of, editor_text, write_through_editor
from loopwright.builtin.workspace import (
    display_path,
    open_checked,
    read_checked,
    require_secret_approval,
    resolve_path,
    verify_descriptor,
    workspace_roots,
)
from loopwright.context.reminders import READ_FILES_KEY, note_file_read
from loopwright.errors import ToolError
from loopwright.safety.sensitive import require_write_approval
from loopwright.tools.base import ToolContext, tool
from loopwright.tools.effects import will_write

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
MAX_LINE_CHARS = 2000
READ_STAMPS = READ_FILES_KEY  # path → mtime_ns; the contract shared with context.reminders

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"BM", "BMP image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"\x00\x00\x01\x00", "ICO image"),
)
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "zip archive (or a zip-based document)"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
)


# --- read stamps ----------------------------------------------------------------------------------


def ensure_not_stale(ctx: ToolContext, path: Path) -> None:
    """`ToolError` if `path` was read (or written) by the tools and has changed on disk since."""
    stamps: dict[str, int] = ctx.state.get(READ_STAMPS) or {}
    seen = stamps.get(str(path))
    if seen is None or not path.exists():
        return
    if path.stat().st_mtime_ns != seen:
        raise ToolError(
            f"{display_path(ctx, path)} changed on disk since you last read it (another process "
            "or the user edited it). Read it again with read_file, then redo the change.")


# --- read_file -----------------------------------------------------------------------------------


@tool(read_only=True, core=True, tags={"files"})
async def read_file(
    path: str,
    ctx: ToolContext,
    offset: Annotated[int, Field(ge=1)] = 1,
    limit: Annotated[int, Field(ge=1, le=MAX_LINES)] = MAX_LINES,
) -> str:
    """Read a text file. Lines come back numbered (`   12\\tcode`); at most 2000 lines or 50 KB
    per call, and a hint says where to continue. Binary and image files are detected and
    described instead of dumped. Read a file before you edit it.

    Args:
        path: File path, relative to the working directory.
        offset: Line number to start from (1 = the first line).
        limit: Maximum number of lines to return (at most 2000).
    """
    target = resolve_path(ctx, path, reading=True)
    if not target.exists():
        raise ToolError(_missing_message(ctx, target))
    if target.is_dir():
        raise ToolError(f"{display_path(ctx, target)} is a directory; use list_dir to see it.")
    await require_secret_approval(ctx, target)
    live = await editor_text(ctx, target)  # an editor's unsaved buffer, when one hosts us
    if live is not None:
        text = _numbered_lines(io.StringIO(live), display_path(ctx, target), offset, limit)
    else:
        text = await asyncio.to_thread(_read_numbered, target, display_path(ctx, target),
                                       offset, limit, workspace_roots(ctx, reading=True))
    note_file_read(ctx, target)
    return text


def _read_numbered(path: Path, shown: str, offset: int, limit: int,
                   roots: Sequence[Path]) -> str:
    with os.fdopen(open_checked(path, roots), "rb") as raw:
        head = raw.read(8192)
        kind = binary_kind(head)
        if kind is not None:
            size = os.fstat(raw.fileno()).st_size
            return (f"{shown} is a {kind} ({size:,} bytes); its content is not shown as text. "
                    "Use bash with a suitable tool if you need to inspect it.")
        raw.seek(0)
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None)
        return _numbered_lines(text, shown, offset, limit)


def _numbered_lines(handle: Iterable[str], shown: str, offset: int, limit: int) -> str:
    out: list[str] = []
    used = 0
    total = 0
    last_shown = offset - 1
    full = False
    for total, line in enumerate(handle, start=1):
        if total < offset or full:
            continue
        body = line.rstrip("\n")
        if len(body) > MAX_LINE_CHARS:
            body = body[:MAX_LINE_CHARS] + f"… [line cut at {MAX_LINE_CHARS} characters]"
        numbered = f"{total:>6}\t{body}\n"
        cost = len(numbered.encode("utf-8"))
        if len(out) >= limit or (out and used + cost > MAX_BYTES):
            full = True
            continue
        out.append(numbered)
        used += cost
        last_shown = total
    if total == 0:
        return f"{shown} is empty."
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines.")
    text = "".join(out)
    if last_shown < total:
        text += (f"\n[Showing lines {offset}-{last_shown} of {total}. Call read_file with "
                 f"offset={last_shown + 1} to continue.]")
    return text


def binary_kind(head: bytes) -> str | None:
    """A description of the file type if `head` (the first bytes) is not text, else None."""
    for magic, kind in (*_IMAGE_MAGIC, *_BINARY_MAGIC):
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "WEBP image"
    if b"\0" in head:
        return "binary file"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is fine; garbage earlier is not.
        if exc.start < len(head) - 4:
            return "binary file (not UTF-8 text)"
    return None


def _missing_message(ctx: ToolContext, target: Path) -> str:
    shown = display_path(ctx, target)
    parent = target.parent
    if not parent.is_dir():
        return f"{shown} does not exist (nor does its directory)."
    names = [p.name for p in parent.iterdir()]
    close = difflib.get_close_matches(target.name, names, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return f"{shown} does not exist.{hint}"


# --- write_file ----------------------------------------------------------------------------------


@tool(core=True, tags={"files"})
async def write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Create a file, or replace a file's whole content. Parent directories are created. Prefer
    edit_file for changes to an existing file.

    Args:
        path: File path, relative to the working directory.
        content: The complete new content of the file.
    """
    target = resolve_path(ctx, path)
    await require_write_approval(ctx, target, preview=lambda: _preview_write(
        {"path": path, "content": content}, ctx))
    await will_write(ctx, [(target, content.encode("utf-8"))])  # durable before the write
    if editor_of(ctx) is not None:
        existed = await asyncio.to_thread(_before_write, ctx, target)
        if await write_through_editor(ctx, target, content):
            note_file_read(ctx, target)
            return _written(ctx, target, content, existed)
    return await asyncio.to_thread(_write_file, ctx, target, content)


async def _preview_write(arguments: dict[str, Any], ctx: ToolContext) -> str:
    target = resolve_path(ctx, str(arguments.get("path", "")))
    content = str(arguments.get("content", "")).encode("utf-8")
    return await asyncio.to_thread(proposed_diff, ctx, target, content)


write_file.preview = _preview_write


def _write_file(ctx: ToolContext, target: Path, content: str) -> str:
    existed = _before_write(ctx, target)
    write_atomically(target, content.encode("utf-8"), workspace_roots(ctx))
    note_file_read(ctx, target)
    return _written(ctx, target, content, existed)


def _before_write(ctx: ToolContext, target: Path) -> bool:
    """The checks and the turn-diff snapshot before `target` is written; whether it existed."""
    if target.is_dir():
        raise ToolError(f"{display_path(ctx, target)} is a directory.")
    ensure_not_stale(ctx, target)
    existed = target.exists()
    snapshot_before_write(ctx, target)
    return existed


def _written(ctx: ToolContext, target: Path, content: str, existed: bool) -> str:
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {display_path(ctx, target)} ({lines} lines, {len(content.encode()):,} bytes)."


def write_atomically(path: Path, data: bytes, roots: Sequence[Path] | None = None) -> None:
    """Write via a temporary file and a rename, keeping the original's permissions. With
    `roots`, the temporary file must really lie inside them (a directory swapped for a symlink
    after the path was checked is caught); the rename then replaces the last component itself,
    never a link's target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if roots is not None:
            verify_descriptor(fd, Path(temp), roots)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# --- edit_file -----------------------------------------------------------------------------------


@tool(core=True, tags={"files"})
async def edit_file(
    path: str,
    old_string: str,
    new_string: str,
    ctx: ToolContext,
    replace_all: bool = False,
) -> str:
    """Replace an exact piece of text in a file. `old_string` must match the file exactly
    (whitespace and indentation included) and, unless `replace_all` is true, exactly once: include
    enough surrounding lines to make it unique. Read the file first.

    Args:
        path: File path, relative to the working directory.
        old_string: The exact text to replace (copied from the file, without line numbers).
        new_string: The text to put in its place.
        replace_all: Replace every occurrence instead of requiring exactly one.
    """
    target = resolve_path(ctx, path)
    shown = display_path(ctx, target)
    if not target.is_file():
        raise ToolError(f"{shown} does not exist; use write_file to create it.")
    await require_secret_approval(ctx, target, verb="edit")
    arguments = {"path": path, "old_string": old_string, "new_string": new_string,
                 "replace_all": replace_all}
    await require_write_approval(ctx, target, verb="edit",
                                 preview=lambda: _preview_edit(arguments, ctx))
    ensure_not_stale(ctx, target)
    text = await editor_text(ctx, target)  # an editor's unsaved buffer, when one hosts us
    if text is None:
        text = _text_to_edit(ctx, target, shown)
    updated, old, new, count = edited_text(shown, text, old_string, new_string, replace_all)
    await will_write(ctx, [(target, updated.encode("utf-8"))])
    snapshot_before_write(ctx, target)
    if not await write_through_editor(ctx, target, updated):
        write_atomically(target, updated.encode("utf-8"), workspace_roots(ctx))
    note_file_read(ctx, target)
    first_line = text[: text.index(old)].count("\n") + 1
    done = f"{count} occurrences" if count > 1 else f"1 occurrence at line {first_line}"
    return f"Edited {shown}: replaced {done}.\n{_excerpt(updated, first_line, new)}"


def _text_to_edit(ctx: ToolContext, target: Path, shown: str) -> str:
    raw = read_checked(target, workspace_roots(ctx))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{shown} is not UTF-8 text; edit_file only edits text files.") from exc


def edited_text(shown: str, text: str, old_string: str, new_string: str, replace_all: bool
                ) -> tuple[str, str, str, int]:
    """`(updated text, old, new, count)` for one edit (`old`/`new` with the file's line
    endings), or `ToolError` saying why the edit does not apply."""
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; nothing would change.")
    if not old_string:
        raise ToolError("old_string is empty; give the exact text to replace.")
    old, new = _match_line_endings(text, old_string, new_string)
    count = text.count(old)
    if count == 0:
        raise ToolError(no_match_message(shown, text, old_string))
    if count > 1 and not replace_all:
        raise ToolError(many_matches_message(shown, text, old, count))
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return updated, old, new, count


async def _preview_edit(arguments: dict[str, Any], ctx: ToolContext) -> str:
    def diff() -> str:
        target = resolve_path(ctx, str(arguments.get("path", "")))
        try:
            text = _text_to_edit(ctx, target, str(target))
            updated = edited_text(str(target), text, str(arguments.get("old_string", "")),
                                  str(arguments.get("new_string", "")),
                                  bool(arguments.get("replace_all")))[0]
        except (OSError, ToolError):
            return ""  # the edit will fail and say why; there is no change to show
        return proposed_diff(ctx, target, updated.encode("utf-8"))

    return await asyncio.to_thread(diff)


edit_file.preview = _preview_edit


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Let LF-only strings match a CRLF file (models rarely reproduce `\\r`)."""
    if "\r\n" in text and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    return old, new


def no_match_message(shown: str, text: str, old: str) -> str:
    """Why `old` was not found, with the closest lines of the file as candidates."""
    message = f"old_string was not found in {shown}."
    if " ".join(old.split()) in " ".join(text.split()):
        message += " It matches if whitespace is ignored: fix the indentation or line breaks."
    candidates = closest_lines(text, old)
    if candidates:
        message += "\nThe closest lines in the file are:\n" + "\n".join(candidates)
    return message + "\nRead the file again and copy the text exactly."


def closest_lines(text: str, old: str, limit: int = 3) -> list[str]:
    """`line_number: text` for the file lines most like the first lines of `old`."""
    lines = text.splitlines()
    wanted = [line.strip() for line in old.splitlines() if line.strip()]
    if not wanted or not lines:
        return []
    scored: list[tuple[float, int]] = []
    for number, line in enumerate(lines, start=1):
        score = max(difflib.SequenceMatcher(None, w, line.strip()).ratio() for w in wanted[:3])
        if score >= 0.5:
            scored.append((score, number))
    best = sorted(scored, key=lambda item: (-item[0], item[1]))[:limit]
    return [f"{n:>6}\t{lines[n - 1][:200]}" for _, n in sorted(best, key=lambda item: item[1])]


def many_matches_message(shown: str, text: str, old: str, count: int) -> str:
    """Where each occurrence of an ambiguous `old_string` is."""
    starts: list[int] = []
    position = text.find(old)
    while position != -1 and len(starts) < 10:
        starts.append(text[:position].count("\n") + 1)
        position = text.find(old, position + 1)
    lines = text.splitlines()
    shown_lines = "\n".join(f"{n:>6}\t{lines[n - 1][:200]}" for n in starts if n <= len(lines))
    return (f"old_string appears {count} times in {shown} (at lines "
            f"{', '.join(map(str, starts))}). Include more surrounding lines to make it unique, "
            f"or set replace_all to true.\n{shown_lines}")


def _excerpt(text: str, first_line: int, inserted: str, context: int = 2) -> str:
    lines = text.splitlines()
    last_line = first_line + max(inserted.count("\n"), 0)
    start = max(first_line - context, 1)
    end = min(last_line + context, len(lines))
    if end - start > 40:
        end = start + 40
    return "\n".join(f"{n:>6}\t{lines[n - 1][:200]}" for n in range(start, end + 1))

