"""Directory tools: `list_dir` (a bounded tree) and `glob` (files by pattern, newest first)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from loopwright.builtin.workspace import display_path, resolve_path, workspace_roots
from loopwright.errors import ToolError
from loopwright.safety.sensitive import is_secret_path
from loopwright.tools.base import ToolContext, tool

MAX_ENTRIES = 500
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                          ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".idea"})


@tool(read_only=True, core=True, tags={"files"})
def list_dir(
    ctx: ToolContext,
    path: str = ".",
    depth: Annotated[int, Field(ge=1, le=5)] = 1,
) -> str:
    """List a directory: sub-directories end with `/`, files show their size (and whether they
    are secrets files, which need approval to read). With depth > 1 the listing descends
    (skipping .git, node_modules, caches, virtualenvs and secrets directories). At most 500
    entries.

    Args:
        path: Directory, relative to the working directory.
        depth: How many levels to descend (1 = just this directory).
    """
    target = resolve_path(ctx, path, reading=True)
    if not target.exists():
        raise ToolError(f"{display_path(ctx, target)} does not exist.")
    if not target.is_dir():
        raise ToolError(f"{display_path(ctx, target)} is a file; use read_file to read it.")
    lines: list[str] = []
    omitted = _walk(target, depth, "", lines)
    if not lines:
        return f"{display_path(ctx, target)}/ is empty."
    header = f"{display_path(ctx, target)}/"
    footer = f"\n[{omitted} more entries not shown; list a sub-directory.]" if omitted else ""
    return header + "\n" + "\n".join(lines) + footer


def _walk(directory: Path, depth: int, indent: str, lines: list[str]) -> int:
    """Append entries to `lines`; return how many were left out by the cap."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: (not _is_dir(e), e.name.lower()))
    except OSError as exc:
        lines.append(f"{indent}[cannot list: {exc.strerror}]")
        return 0
    omitted = 0
    for entry in entries:
        if len(lines) >= MAX_ENTRIES:
            omitted += 1
            continue
        if _is_dir(entry):
            suffix = " -> " + os.readlink(entry.path) if entry.is_symlink() else ""
            lines.append(f"{indent}{entry.name}/{suffix}")
            if depth > 1 and entry.name not in SKIPPED_DIRS and not entry.is_symlink() and \
                    not is_secret_path(Path(entry.path, "x")):
                omitted += _walk(Path(entry.path), depth - 1, indent + "  ", lines)
        else:
            note = ", a secrets file: reading it needs approval" if is_secret_path(
                entry.path) else ""
            lines.append(f"{indent}{entry.name}  ({_size(entry)}{note})")
    return omitted


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _size(entry: os.DirEntry[str]) -> str:
    try:
        size = float(entry.stat().st_size)
    except OSError:
        return "unreadable"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


@tool(read_only=True, core=True, tags={"files", "search"})
def glob(
    pattern: str,
    ctx: ToolContext,
    path: str = ".",
) -> str:
    """Find files by name pattern, newest first (at most 500). `**` matches any number of
    directories: `**/*.py`, `src/**/test_*.py`, `*.md`. .git and node_modules are skipped.

    Args:
        pattern: Glob pattern, relative to `path`.
        path: Directory to search from, relative to the working directory.
    """
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ToolError("the pattern must be relative and may not contain '..'; "
                        "set `path` to choose where to search.")
    base = resolve_path(ctx, path, reading=True)
    if not base.is_dir():
        raise ToolError(f"{display_path(ctx, base)} is not a directory.")
    roots = workspace_roots(ctx, reading=True)
    found: list[tuple[float, Path]] = []
    for match in base.glob(pattern):
        if SKIPPED_DIRS.intersection(match.relative_to(base).parts) or not match.is_file():
            continue
        real = match.resolve()
        if not any(real == root or real.is_relative_to(root) for root in roots):
            continue  # a symlink pointing out of the workspace
        found.append((_mtime(match), match))
    if not found:
        return f"No files match {pattern!r} under {display_path(ctx, base)}."
    found.sort(key=lambda item: (-item[0], str(item[1])))
    shown = [display_path(ctx, p) for _, p in found[:MAX_ENTRIES]]
    footer = ""
    if len(found) > MAX_ENTRIES:
        footer = f"\n[{len(found) - MAX_ENTRIES} more matches not shown; narrow the pattern.]"
    return "\n".join(shown) + footer


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
