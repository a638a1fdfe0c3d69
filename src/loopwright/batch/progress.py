"""The batch's live progress bar (rich): done / failed / running, tokens, cost and ETA."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from loopwright.batch.results import ResultRow

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


class BatchProgress:
    """Counts what the batch did; draws a bar on `console` when `enabled` (a terminal)."""

    def __init__(self, total: int, *, console: Console | None = None,
                 enabled: bool = True) -> None:
        self.total = total
        self.done = self.failed = self.solved = self.running = 0
        self.tokens = 0
        self.cost = 0.0
        self.cost_known = True
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        if enabled and total:
            self._bar, self._task = _make_bar(total, console)

    def __enter__(self) -> BatchProgress:
        if self._bar is not None:
            self._bar.start()
            self._redraw()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._redraw()
            self._bar.stop()

    def started(self) -> None:
        self.running += 1
        self._redraw()

    def requeued(self) -> None:
        self.running -= 1
        self._redraw()

    def finished(self, row: ResultRow, *, was_running: bool = True) -> None:
        if was_running:
            self.running -= 1
        self.done += 1
        self.failed += row.status != "done"
        self.solved += row.solved
        self.tokens += row.tokens
        if row.cost is None and row.status != "invalid":
            self.cost_known = False
        self.cost += row.cost or 0.0
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)
        self._redraw()

    def stats(self) -> str:
        cost = f"${self.cost:.4f}" + ("" if self.cost_known else "+?")
        return (f"solved {self.solved} · failed {self.failed} · running {self.running} · "
                f"{self.tokens:,} tokens · {cost}")

    def _redraw(self) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, stats=self.stats())


def _make_bar(total: int, console: Console | None) -> tuple[Progress, TaskID]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), TextColumn("ETA"),
        TimeRemainingColumn(), console=console, refresh_per_second=4, transient=False,
    )
    return bar, bar.add_task("batch", total=total, stats="")
