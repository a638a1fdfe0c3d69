"""The workspace boundary shared by every file tool.

Paths are resolved against the run's working directory and must stay inside it (or inside a root
the user allowed with `Settings.allowed_roots`). Resolution follows symlinks, so `../`, absolute
paths and links pointing out of the workspace are all refused the same way. Secrets files (`.env`,
keys, credentials) need the user's approval to read: the list is `loopwright.safety.sensitive`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from loopwright.errors import ToolError
from loopwright.safety.sensitive import is_secret_path, require_secret_approval
from loopwright.tools.base import ToolContext
from loopwright.tools.output import (
    is_foreign_spill,
    run_spill_root,
    spill_scope,
)

__all__ = ["ALLOWED_ROOTS_SERVICE", "READ_ONLY_ROOTS_SERVICE", "display_path", "is_secret_path",
           "open_checked", "read_checked", "require_secret_approval", "resolve_path",
           "verify_descriptor", "workspace_roots"]

ALLOWED_ROOTS_SERVICE = "allowed_roots"
"""`ToolContext.services` key holding the extra roots (a list of paths) the user allowed."""
READ_ONLY_ROOTS_SERVICE = "read_only_roots"
"""`ToolContext.services` key holding roots the file tools may read but never write (the
folders of skills that live outside the workspace)."""

def workspace_roots(ctx: ToolContext, *, reading: bool = False) -> list[Path]:
    """The working directory first, then every extra root the user allowed (and, `reading`,
    the read-only roots)."""
    extra = [*(ctx.services.get(ALLOWED_ROOTS_SERVICE) or ()),
             *((ctx.services.get(READ_ONLY_ROOTS_SERVICE) or ()) if reading else ())]
    roots = [Path(ctx.workdir).resolve()]
    roots.extend(Path(os.path.expanduser(str(root))).resolve() for root in extra)
    return roots


def resolve_path(ctx: ToolContext, raw: str, *, reading: bool = False) -> Path:
    """`raw` as an absolute, symlink-free path inside the workspace; `ToolError` if it escapes.
    `reading`: the read-only roots count too (for tools that only read)."""
    if not raw or not raw.strip():
        raise ToolError("the path is empty; give a path relative to the working directory")
    candidate = Path(os.path.expanduser(raw.strip()))
    if not candidate.is_absolute():
        candidate = Path(ctx.workdir) / candidate
    resolved = candidate.resolve()
    roots = workspace_roots(ctx, reading=reading)
    _refuse_foreign_spill(ctx, raw, resolved)
    if not _inside_any(resolved, roots):
        shown = ", ".join(str(root) for root in roots)
        hint = " (it is a symlink that points outside)" if _is_link_escape(candidate) else ""
        raise ToolError(
            f"{raw!r} resolves to {resolved}, outside the workspace{hint}. File tools may only "
            f"touch paths under: {shown}. Use a path relative to the working directory.")
    return resolved


def _refuse_foreign_spill(ctx: ToolContext, raw: str, resolved: Path) -> None:
    """Another session's spilled outputs stay out of reach where the workspace holds the cache
    (a workspace of `~`): they are other projects' command outputs (docs/safety.md)."""
    if is_foreign_spill(resolved, run_spill_root(ctx), spill_scope(ctx)):
        raise ToolError(f"{raw!r} is another session's spilled output; only this session's "
                        "may be read")


def display_path(ctx: ToolContext, path: Path) -> str:
    """A short form for messages: relative to the working directory when inside it."""
    workdir = Path(ctx.workdir).resolve()
    try:
        relative = path.relative_to(workdir)
    except ValueError:
        return str(path)
    return str(relative) or "."


def _inside_any(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _is_link_escape(candidate: Path) -> bool:
    """Whether some component of the unresolved path is a symlink (for a clearer error)."""
    current = candidate
    while current != current.parent:
        if current.is_symlink():
            return True
        current = current.parent
    return False


def open_checked(path: Path, roots: Sequence[Path], flags: int = os.O_RDONLY) -> int:
    """Open `path`, already resolved and checked, so that a symlink swapped in since then cannot
    redirect the open: the last component is opened with `O_NOFOLLOW`, and the descriptor's real
    location must still be inside `roots` (a parent directory swapped for a link is caught
    there). Only a regular file: a named pipe is opened without waiting for a writer and
    refused (a worker thread waiting on one would never come back)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if path.is_symlink():
            raise ToolError(f"{path} became a symlink after it was checked; not opened. "
                            "Check the path again.") from exc
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"{path} is not a regular file (a named pipe, socket or device); "
                            "not opened.")
        verify_descriptor(fd, path, roots)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def verify_descriptor(fd: int, path: Path, roots: Sequence[Path]) -> None:
    """`ToolError` unless the file open at `fd` really lies inside `roots`."""
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # no /proc (macOS): the path as it resolves now is the best we have
        real = path.resolve()
    if not _inside_any(real, roots):
        raise ToolError(f"{path} now leads to {real}, outside the workspace (a directory on its "
                        "way was swapped for a symlink); not touched.")


def read_checked(path: Path, roots: Sequence[Path]) -> bytes:
    """The bytes of `path`, read through `open_checked`."""
    with os.fdopen(open_checked(path, roots), "rb") as handle:
        return handle.read()
