"""`results.jsonl`: one line per task, appended as the task finishes (within `FLUSH_SECONDS`).

Lines are written by the batch's writer thread (`JsonlWriter`), in the order the tasks finish,
to a file opened for appending and flushed at once; the event loop hands them over in groups,
at most `FLUSH_SECONDS` after a task ends. So a batch killed with SIGKILL keeps every task
that finished more than `FLUSH_SECONDS` before: only the tasks in flight and those that ended
in that last moment are lost, and `--resume` runs them again. A line cut by a crash mid-write
(no trailing newline) is dropped when the file is reopened with `--resume`, before anything is
appended after it.

Statuses: `done` (the run ended, whatever its stop reason), `failed` (the task could not run, or
its run ended with `error`), `invalid` (a malformed task line; never run).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import stat
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO, get_args

from loopwright.errors import ConfigError

Status = Literal["done", "failed", "invalid"]
RESULTS_FILE = "results.jsonl"
# how long a finished task's lines may wait on the event loop before the writer thread gets
# them, and how many may wait: a batch killed with SIGKILL runs those tasks again on --resume
FLUSH_SECONDS = 0.2
FLUSH_LINES = 256


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
        """A row as `to_dict` wrote it; `ValueError` for any other (a line damaged, or written
        by something else: a row of another shape was trusted — its task not run again — or
        failed the resume with a raw TypeError)."""
        wrong = sorted(key for key in data.keys() | _REQUIRED
                       if not _ROW_FIELDS.get(key, _never)(data.get(key, _MISSING)))
        if wrong:
            raise ValueError(f"{', '.join(wrong)} not as loopwright writes them")
        return cls(**data)

    def resume_key(self) -> str:
        """What `--resume` matches: the id, or the line for an invalid line without one."""
        return self.id if self.id is not None else f"line {self.line}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _never(value: Any) -> bool:
    return False


def _absent_or(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is _MISSING or check(value)


_MISSING = object()
_REQUIRED = frozenset({"id", "line", "status"})
# each key of a row's line with what its value must be (absent: the field's default)
_ROW_FIELDS: dict[str, Callable[[Any], bool]] = {
    "id": _optional_text, "line": _whole, "status": lambda value: value in get_args(Status),
    "solved": _absent_or(lambda value: isinstance(value, bool)),
    "stop_reason": _absent_or(_optional_text), "error": _absent_or(_optional_text),
    "session_id": _absent_or(_optional_text),
    "verdict": _absent_or(lambda value: isinstance(value, dict)),
    "usage": _absent_or(lambda value: isinstance(value, dict) and all(
        isinstance(key, str) and _whole(count) for key, count in value.items())),
    "turns": _absent_or(_whole), "tokens": _absent_or(_whole),
    "cost": _absent_or(lambda value: value is None or _number(value)),
    "wall": _absent_or(_number), "output": _absent_or(lambda value: isinstance(value, str))}


class DamagedResultsWarning(UserWarning):
    """Warned once by a resumed batch whose `results.jsonl` holds damaged lines (their tasks
    run again)."""


def failed_row(*, id: str | None, line: int, error: str, invalid: bool = False) -> ResultRow:
    return ResultRow(id=id, line=line, status="invalid" if invalid else "failed", error=error)


class JsonlWriter:
    """The batch's JSONL files, written in call order by one thread of their own.

    The event loop gathers lines and hands them to the thread at most every `FLUSH_SECONDS`
    or `FLUSH_LINES` lines: handing over each line woke the thread once a task, and that
    thread, taking the interpreter's lock from the loop's, cost about three context switches a
    task (a hop to a worker thread and back per line, before, was a fifth of the batch's own
    CPU). Each hand-over goes out in one write per file, flushed at once, in the order the
    lines came across files: a task's trajectory line is on disk before its result line. What
    a `kill -9` can lose is the lines of the last `FLUSH_SECONDS` (see the module docstring);
    `aclose()` returns once every line is written."""

    def __init__(self, *, flush_seconds: float = FLUSH_SECONDS,
                 flush_lines: int = FLUSH_LINES) -> None:
        self._flush_seconds = flush_seconds
        self._flush_lines = flush_lines
        self._pending: list[tuple[TextIO, str]] = []  # gathered on the event loop's thread
        self._timer: asyncio.TimerHandle | None = None
        self._lines: queue.SimpleQueue[list[tuple[TextIO, str]] | None] = queue.SimpleQueue()
        self._handles: list[TextIO] = []
        self._failure: OSError | None = None
        self._thread = threading.Thread(target=self._write_lines, daemon=True,
                                        name="loopwright-batch-writer")
        self._thread.start()

    def open(self, path: Path) -> JsonlAppender:
        """Blocking (disk): `path` opened for appending."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a", encoding="utf-8")
        self._handles.append(handle)
        return JsonlAppender(path, handle, self)

    def put(self, handle: TextIO, line: str) -> None:
        """On the event loop's thread: `line` is written within `FLUSH_SECONDS`."""
        if self._failure is not None:  # a full disk: the batch stops rather than lose lines
            raise self._failure
        self._pending.append((handle, line))
        if len(self._pending) >= self._flush_lines:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._flush_seconds,
                                                                self.flush)

    def flush(self) -> None:
        """On the event loop's thread: the lines gathered so far go to the writer thread."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            self._lines.put(self._pending)
            self._pending = []

    async def aclose(self) -> None:
        """Every line written, the files closed (the waiting is done off the event loop)."""
        self.flush()
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._lines.put(None)
        self._thread.join()
        for handle in self._handles:
            try:
                handle.close()  # after a failed write, what it still buffers fails again
            except OSError as exc:
                self._failure = self._failure or exc
        if self._failure is not None:
            raise self._failure

    def _write_lines(self) -> None:
        done = False
        while not done:
            handed = [self._lines.get()]
            while not self._lines.empty():
                handed.append(self._lines.get())
            done = None in handed
            runs: list[tuple[TextIO, list[str]]] = []  # consecutive lines of one file
            for lines in handed:
                for handle, line in lines or ():
                    if runs and runs[-1][0] is handle:
                        runs[-1][1].append(line)
                    else:
                        runs.append((handle, [line]))
            for handle, texts in runs:
                if self._failure is not None:
                    break
                try:
                    handle.write("".join(texts))
                    handle.flush()  # into the kernel: a SIGKILL cannot lose it now
                except OSError as exc:
                    self._failure = exc


class JsonlAppender:
    """One JSON line per `append`, queued to the batch's `JsonlWriter`."""

    def __init__(self, path: Path, handle: TextIO, writer: JsonlWriter) -> None:
        self.path = path
        self._handle = handle
        self._writer = writer

    def append(self, item: dict[str, Any]) -> None:
        """Queue one line; raises the error a previous write met."""
        self._writer.put(self._handle, json.dumps(item, ensure_ascii=False) + "\n")


def open_results(path: Path, *, resume: bool) -> list[ResultRow]:
    """The rows already in `path` (when resuming; its cut last line is repaired, each damaged
    line skipped, its task run again, and named in one `DamagedResultsWarning`). Refuses to
    start over a file that holds results unless resuming. Blocking: call it off the loop."""
    if not (regular_file(path) and path.stat().st_size):
        return []
    if not resume:
        raise ConfigError(f"{path} already holds results; pass --resume to continue that "
                          "batch, or choose another output directory")
    damaged: list[int] = []
    rows = read_rows(path, repair=True, damaged=damaged)
    if damaged:
        lines = ", ".join(map(str, damaged[:10])) + (", …" if len(damaged) > 10 else "")
        warnings.warn(DamagedResultsWarning(
            f"{path}: {len(damaged)} damaged line(s) skipped (line {lines}); their tasks run "
            "again"), stacklevel=2)
    return rows


def regular_file(path: Path) -> bool:
    """Whether `path` is a file (False: absent); `ConfigError` when it is something else: a
    directory failed the resume raw, a pipe hung it, a link to /dev/zero swallowed every row."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{path} is not a file; move it aside, or choose another output "
                          "directory")
    return True


def keep_lines(path: Path, keep: set[str]) -> None:
    """Rewrite a JSONL file keeping only lines whose `id` is in `keep` (a resumed batch drops
    the trajectories of tasks it runs again, and a line cut by a crash). Blocking."""
    if not regular_file(path):
        return
    kept = []
    for raw in path.read_bytes().splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            continue
        try:
            item = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past json's depth
            continue
        if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"] in keep:
            kept.append(raw)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_bytes(b"".join(kept))
    os.replace(temporary, path)


def read_rows(path: Path, *, repair: bool = False, damaged: list[int] | None = None
              ) -> list[ResultRow]:
    """The rows of a results file. A last line cut by a crash is dropped — and, with `repair`,
    cut off the file, so that the next append starts on a line of its own. Any other line that
    is not a row as loopwright writes it is skipped (its number put in `damaged`): a damaged
    line is a task to run again, not a reason to stop."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data) and repair:
        with path.open("r+b") as handle:
            handle.truncate(end)
            os.fsync(handle.fileno())
    rows = []
    for number, raw in enumerate(data[:end].splitlines(), start=1):
        try:
            item = json.loads(raw)
            if not isinstance(item, dict):
                raise ValueError("not an object")
            rows.append(ResultRow.from_dict(item))
        except (ValueError, RecursionError):  # not JSON (or nested past its depth), not a row
            if damaged is not None and raw.strip():
                damaged.append(number)
    return rows


def latest_rows(rows: list[ResultRow]) -> list[ResultRow]:
    """The newest row per task (a resumed batch may have re-run failed tasks)."""
    newest: dict[str, ResultRow] = {}
    for row in rows:
        newest.pop(row.resume_key(), None)  # keep finishing order
        newest[row.resume_key()] = row
    return list(newest.values())
