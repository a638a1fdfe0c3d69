"""`results.jsonl`: one line per task, appended the moment the task finishes.

Each line is written with a single `write` to a file opened for appending and flushed at once,
so a batch killed with SIGKILL keeps every finished task: only the tasks in flight are lost. A
line cut by a crash mid-write (no trailing newline) is dropped when the file is reopened with
`--resume`, before anything is appended after it.

Statuses: `done` (the run ended, whatever its stop reason), `failed` (the task could not run, or
its run ended with `error`), `invalid` (a malformed task line; never run).
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["done", "failed", "invalid"]
RESULTS_FILE = "results.jsonl"


@dataclass(kw_only=True)
class ResultRow:
    """One task's outcome, as written to `results.jsonl`."""

    id: str | None
    line: int
    status: Status
    solved: bool = False
    stop_reason: str | None = None
    verdict: dict[str, Any] = field(default_factory=lambda: {"passed": None, "checker": None,
                                                             "detail": ""})
    turns: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    cost: float | None = None
    wall: float = 0.0
    session_id: str | None = None
    error: str | None = None
    output: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "line": self.line, "status": self.status, "solved": self.solved,
            "stop_reason": self.stop_reason, "verdict": self.verdict, "turns": self.turns,
            "usage": self.usage, "tokens": self.tokens, "cost": self.cost,
            "wall": round(self.wall, 4), "session_id": self.session_id, "error": self.error,
            "output": self.output,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultRow:
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        return cls(**known)

    def resume_key(self) -> str:
        """What `--resume` matches: the id, or the line for an invalid line without one."""
        return self.id if self.id is not None else f"line {self.line}"


def failed_row(*, id: str | None, line: int, error: str, invalid: bool = False) -> ResultRow:
    return ResultRow(id=id, line=line, status="invalid" if invalid else "failed", error=error)


class JsonlAppender:
    """Appends JSON lines to a file, each with one write, flushed at once (see the module
    docstring); the writes run off the event loop, in call order."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handle = path.open("a", encoding="utf-8")
        self._lock = asyncio.Lock()

    async def append(self, item: dict[str, Any]) -> None:
        line = json.dumps(item, ensure_ascii=False) + "\n"
        async with self._lock:  # lines in finishing order, never interleaved
            await asyncio.to_thread(self._write, line)

    def _write(self, line: str) -> None:
        self._handle.write(line)
        self._handle.flush()  # into the kernel: a SIGKILL of this process cannot lose it now

    def close(self) -> None:
        self._handle.close()


def open_results(path: Path, *, resume: bool) -> list[ResultRow]:
    """The rows already in `path` (when resuming; its cut last line is repaired). Refuses to
    start over a file that holds results unless resuming. Blocking: call it off the loop."""
    if not (path.exists() and path.stat().st_size):
        return []
    if not resume:
        from loopwright.errors import ConfigError

        raise ConfigError(f"{path} already holds results; pass --resume to continue that "
                          "batch, or choose another output directory")
    return read_rows(path, repair=True)


def keep_lines(path: Path, keep: set[str]) -> None:
    """Rewrite a JSONL file keeping only lines whose `id` is in `keep` (a resumed batch drops
    the trajectories of tasks it runs again, and a line cut by a crash). Blocking."""
    if not path.exists():
        return
    kept = []
    for raw in path.read_bytes().splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and item.get("id") in keep:
            kept.append(raw)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_bytes(b"".join(kept))
    os.replace(temporary, path)


def read_rows(path: Path, *, repair: bool = False) -> list[ResultRow]:
    """The rows of a results file. A last line cut by a crash is dropped — and, with `repair`,
    cut off the file, so that the next append starts on a line of its own."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data) and repair:
        with path.open("r+b") as handle:
            handle.truncate(end)
            os.fsync(handle.fileno())
    rows = []
    for raw in data[:end].splitlines():
        try:
            item = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a damaged line is a task to run again, not a reason to stop
        if isinstance(item, dict):
            rows.append(ResultRow.from_dict(item))
    return rows


def latest_rows(rows: list[ResultRow]) -> list[ResultRow]:
    """The newest row per task (a resumed batch may have re-run failed tasks)."""
    newest: dict[str, ResultRow] = {}
    for row in rows:
        newest.pop(row.resume_key(), None)  # keep finishing order
        newest[row.resume_key()] = row
    return list(newest.values())
