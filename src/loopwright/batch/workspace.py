"""Each task's own workspace: a copy of its `workspace` directory plus its `files`, or an empty
directory — so tasks running at once never see each other's changes. Blocking (disk): callers
run these functions in a worker thread."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from loopwright.batch.tasks import TaskSpec

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def workspace_name(task_id: str) -> str:
    """A directory name for a task: readable, and distinct for distinct ids (a short hash of the
    id is appended, since cleaning it may make two ids equal)."""
    slug = _UNSAFE.sub("_", task_id)[:60].strip("._") or "task"
    return f"{slug}-{hashlib.sha256(task_id.encode()).hexdigest()[:8]}"


def prepare_workspace(task: TaskSpec, root: Path) -> Path:
    """Create the task's workspace under `root` (an old one left by a killed batch is replaced)
    and return it."""
    path = root / workspace_name(task.id)
    if path.exists():
        shutil.rmtree(path)
    if task.workspace is not None:
        # symlinks stay links: copying their targets could pull in files from outside the tree
        shutil.copytree(task.workspace, path, symlinks=True)
    else:
        path.mkdir(parents=True)
    inside = path.resolve()
    for name, text in task.files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # a link copied from the workspace must not redirect the write out of it
        if not target.parent.resolve().is_relative_to(inside):
            raise OSError(f"files[{name!r}]: its directory leads outside the workspace")
        if target.is_symlink():
            target.unlink()
        target.write_text(text, encoding="utf-8")
    return path


def remove_workspace(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
