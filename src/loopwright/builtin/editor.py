"""An editor that hosts the agent (ACP) and owns the files' live text: the file tools read its
unsaved buffers and write through it, so the user sees a change in the buffer they have open.

A host puts an `EditorFiles` object in the run's services under `EDITOR_FILES_SERVICE`. The
file tools still resolve and check every path (workspace boundary, secrets, protected paths)
before they ask the editor; the editor only replaces the disk read or write itself. When it
cannot answer (`None` / `False`, or it raises) the tools use the disk as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from loopwright.tools.base import ToolContext

EDITOR_FILES_SERVICE = "editor_files"


@runtime_checkable
class EditorFiles(Protocol):
    async def read_text(self, path: Path) -> str | None:
        """The file's text as the editor has it (unsaved changes included), or None."""

    async def write_text(self, path: Path, text: str) -> bool:
        """Replace the file's text through the editor; False if it could not."""


def editor_of(ctx: ToolContext) -> EditorFiles | None:
    editor = ctx.services.get(EDITOR_FILES_SERVICE)
    return editor if isinstance(editor, EditorFiles) else None


async def editor_text(ctx: ToolContext, path: Path) -> str | None:
    """The editor's text of `path` (already checked by the caller), or None: use the disk."""
    editor = editor_of(ctx)
    if editor is None:
        return None
    try:
        return await editor.read_text(path)
    except Exception:  # an editor that fails to answer must not fail the read
        return None


async def write_through_editor(ctx: ToolContext, path: Path, text: str) -> bool:
    """Whether the editor took the write of `path` (already checked and approved)."""
    editor = editor_of(ctx)
    if editor is None:
        return False
    try:
        return await editor.write_text(path, text)
    except Exception:
        return False
