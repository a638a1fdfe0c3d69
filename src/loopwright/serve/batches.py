"""`GET /batches` and `GET /batches/{n}`: the results of `loopwright batch` runs the server was
pointed at (`loopwright serve --batch DIR`), for the page's batch view.

A batch writes one line per task to `DIR/results.jsonl` (`batch/results.py`); each task's run is
also a session in the store, so a row links to it by `session_id`. The file is read on every
request (in a worker thread), so a batch still running shows its newest rows. Its lines are
hostile input like any file: a row whose fields have the wrong types is left out (by
`read_rows`, as `--resume` leaves it out), long text is cut, and a file over
`MAX_RESULTS_BYTES` is refused rather than read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopwright.batch.results import RESULTS_FILE, ResultRow, latest_rows, read_rows
from loopwright.batch.summary import summarize

MAX_RESULTS_BYTES = 64 * 1024 * 1024
MAX_TEXT = 2_000  # characters of a row's output, error or verdict detail sent to the page


class BatchUnreadable(Exception):
    """The results file is missing or too large."""


@dataclass(frozen=True, kw_only=True)
class BatchSource:
    """One batch the server shows: its name and its results file."""

    name: str
    results: Path

    @classmethod
    def of(cls, path: Path) -> BatchSource:
        """A batch's output directory (or its `results.jsonl` itself)."""
        results = path / RESULTS_FILE if path.is_dir() or path.suffix != ".jsonl" else path
        return cls(name=results.parent.name or str(results.parent), results=results)


async def batch_list(sources: list[BatchSource]) -> list[dict[str, Any]]:
    """Each batch by number, with its summary (or why it cannot be read)."""
    listed = []
    for number, source in enumerate(sources):
        item: dict[str, Any] = {"id": number, "name": source.name}  # no path: the server's own
        try:
            item["summary"] = (await batch_detail(source))["summary"]
        except BatchUnreadable as exc:
            item["error"] = str(exc)
        listed.append(item)
    return listed


async def batch_detail(source: BatchSource) -> dict[str, Any]:
    """The latest row of every task and their summary. Raises `BatchUnreadable`."""
    rows = await asyncio.to_thread(_read, source.results)
    latest = latest_rows(rows)
    return {"name": source.name,
            "summary": summarize(latest).to_dict(), "rows": [_shown(row) for row in latest]}


def _read(path: Path) -> list[ResultRow]:
    """Blocking: the well-formed rows of a results file. Its error names the file by its batch
    (the directory's name), not by its path: clients are told no path of the server's."""
    named = f"{path.parent.name}/{path.name}"
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BatchUnreadable(f"{named}: {exc.strerror or type(exc).__name__}") from exc
    if size > MAX_RESULTS_BYTES:
        raise BatchUnreadable(f"{named} is over {MAX_RESULTS_BYTES // 2**20} MiB")
    return read_rows(path)  # each line checked as loopwright writes it (ResultRow.from_dict)


def _shown(row: ResultRow) -> dict[str, Any]:
    verdict = row.verdict
    passed = verdict.get("passed")
    detail = verdict.get("detail")
    checker = verdict.get("checker")
    return {**row.to_dict(), "output": row.output[:MAX_TEXT],
            "error": row.error[:MAX_TEXT] if row.error else row.error,
            "verdict": {"passed": passed if isinstance(passed, bool) else None,
                        "checker": checker if isinstance(checker, str) else None,
                        "detail": detail[:MAX_TEXT] if isinstance(detail, str) else ""}}
