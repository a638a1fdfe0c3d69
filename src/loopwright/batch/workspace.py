"""Each task's own workspace: a copy of its `workspace` directory plus its `files`, or an empty
directory — so tasks running at once never see each other's changes. Blocking (disk): callers
run these functions in a worker thread."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from loopwright.batch.tasks import TaskSpec
from loopwright.store.lease import HOST, pid_alive

ROOT_PREFIX = "loopwright-batch-"
OWNER_FILE = ".loopwright-batch-owner"  # "<host> <pid>" of the batch using the directory

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


SHARED_EMPTY = "no-files"  # no task's name: each of those ends in "-" and eight hex digits


def shared_empty_workdir(root: Path) -> Path:
    """The one empty directory under `root` that tasks touching no files run in, read-only
    so that nothing a run starts can leave a file there for the next task."""
    path = root / SHARED_EMPTY
    path.mkdir(exist_ok=True)
    path.chmod(0o555)
    return path


def remove_workspace(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def temporary_root() -> Path:
    """A fresh temporary directory for one batch's workspaces, marked with this process as its
    owner; first, the ones batches killed on this host left behind are removed."""
    sweep_dead_roots(Path(tempfile.gettempdir()))
    root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
    (root / OWNER_FILE).write_text(f"{HOST} {os.getpid()}", encoding="utf-8")
    return root


def sweep_dead_roots(directory: Path) -> list[Path]:
    """Remove the workspace directories under `directory` whose batch is gone (its process no
    longer runs on this host); a live batch's, another host's and unmarked ones stay."""
    removed = []
    for root in directory.glob(f"{ROOT_PREFIX}*"):
        owner = _owner(root)
        if owner is not None and owner[0] == HOST and not pid_alive(owner[1]):
            remove_workspace(root)
            removed.append(root)
    return removed


def _owner(root: Path) -> tuple[str, int] | None:
    try:
        host, pid = (root / OWNER_FILE).read_text(encoding="utf-8").rsplit(" ", 1)
        return host, int(pid)
    except (OSError, ValueError):  # not ours, not marked yet, or written by hand: left alone
        return None
