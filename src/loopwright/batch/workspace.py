"""Each task's own workspace: a copy of its `workspace` directory plus its `files`, or an empty
directory — so tasks running at once never see each other's changes. Blocking (disk): callers
run these functions in a worker thread."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
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
    longer runs on this host); a live batch's, another host's, another user's and unmarked
    ones stay, as does anything that is not a directory (a symlink named like one)."""
    removed = []
    for root in directory.glob(f"{ROOT_PREFIX}*"):
        owner = _owner(root)
        if owner is not None and owner[0] == HOST and not pid_alive(owner[1]):
            remove_workspace(root)  # rmtree: never follows a symlink inside, nor one put here
            removed.append(root)
    return removed


_MARK_BYTES = 512  # a mark is "<host> <pid>": anything longer was not written by a batch
_MAX_PID = 1 << 22  # Linux's largest pid_max


def _owner(root: Path) -> tuple[str, int] | None:
    """(host, pid) of the batch that marked `root`, or None when `root` is not a directory of
    this user's holding a mark of a batch's (its mark a regular file, never read through a
    symlink or from a pipe)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    try:
        if not _is_ours(os.lstat(root), uid, stat.S_ISDIR):
            return None
        fd = os.open(root / OWNER_FILE, os.O_RDONLY | os.O_NONBLOCK | getattr(
            os, "O_NOFOLLOW", 0))
        with open(fd, "rb") as mark:
            if not _is_ours(os.fstat(fd), uid, stat.S_ISREG):
                return None
            host, pid = mark.read(_MARK_BYTES).decode().rsplit(" ", 1)
    except (OSError, ValueError):  # not ours, not marked yet, or written by hand: left alone
        return None
    if not pid.isdigit() or not 1 < int(pid) <= _MAX_PID:
        return None
    return host, int(pid)


def _is_ours(info: os.stat_result, uid: int | None, kind: Callable[[int], bool]) -> bool:
    return kind(info.st_mode) and (uid is None or info.st_uid == uid)
