"""The end-of-batch summary: solved share, stop reasons, token and latency percentiles."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwright.batch.results import ResultRow

if TYPE_CHECKING:
    from rich.table import Table

PERCENTILES = (50, 90, 99)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(kw_only=True)
class BatchSummary:
    """Totals over the latest row of every task in `results.jsonl`."""

    tasks: int = 0
    solved: int = 0
    checked: int = 0  # tasks that had a checker
    failed: int = 0
    invalid: int = 0
    by_stop_reason: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)  # p50, p90, p99, max, total
    wall: dict[str, float] = field(default_factory=dict)  # seconds, same keys but total
    cost: float | None = None  # None when any run's cost was unknown
    elapsed: float = 0.0  # this invocation's wall time
    ran: int = 0  # tasks run by this invocation

    @property
    def solved_share(self) -> float:
        return self.solved / self.tasks if self.tasks else 0.0

    @property
    def runs_per_second(self) -> float:
        return self.ran / self.elapsed if self.elapsed > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks, "solved": self.solved, "solved_share": self.solved_share,
            "checked": self.checked, "failed": self.failed, "invalid": self.invalid,
            "by_stop_reason": self.by_stop_reason, "tokens": self.tokens, "wall": self.wall,
            "cost": self.cost, "elapsed": round(self.elapsed, 3), "ran": self.ran,
            "runs_per_second": round(self.runs_per_second, 3),
        }


def summarize(rows: list[ResultRow], *, elapsed: float = 0.0, ran: int = 0) -> BatchSummary:
    """`rows`: the latest row per task (see `results.latest_rows`)."""
    runs = [row for row in rows if row.status != "invalid"]
    tokens = [float(row.tokens) for row in runs]
    walls = [row.wall for row in runs]
    costs = [row.cost for row in runs]
    return BatchSummary(
        tasks=len(rows),
        solved=sum(row.solved for row in rows),
        checked=sum(row.verdict.get("checker") is not None for row in rows),
        failed=sum(row.status == "failed" for row in rows),
        invalid=sum(row.status == "invalid" for row in rows),
        by_stop_reason=dict(Counter(row.stop_reason or "not run" for row in rows).most_common()),
        tokens={**_spread(tokens), "total": sum(tokens)},
        wall=_spread(walls),
        cost=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        elapsed=elapsed,
        ran=ran,
    )


def _spread(values: list[float]) -> dict[str, float]:
    out = {f"p{p}": percentile(values, p) for p in PERCENTILES}
    out["max"] = max(values, default=0.0)
    return out


def summary_table(summary: BatchSummary) -> Table:
    """The summary as a rich table (the CLI prints it when the batch ends)."""
    from rich.table import Table

    table = Table(title="batch summary", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    share = f"{summary.solved_share:.1%}"
    table.add_row("solved", f"{summary.solved}/{summary.tasks} ({share})"
                  + (f"; {summary.checked} with a checker" if summary.checked else ""))
    if summary.failed or summary.invalid:
        table.add_row("failed", f"{summary.failed} failed, {summary.invalid} invalid lines")
    table.add_row("stop reasons", ", ".join(f"{reason} {count}"
                                            for reason, count in summary.by_stop_reason.items()))
    table.add_row("tokens per task", _spread_text(summary.tokens, "{:,.0f}")
                  + f"; total {summary.tokens.get('total', 0):,.0f}")
    table.add_row("wall per task", _spread_text(summary.wall, "{:.2f} s"))
    table.add_row("cost", "unknown" if summary.cost is None else f"${summary.cost:.4f}")
    if summary.ran:
        table.add_row("this run", f"{summary.ran} tasks in {summary.elapsed:.1f} s "
                      f"({summary.runs_per_second:.1f}/s)")
    return table


def _spread_text(values: dict[str, float], fmt: str) -> str:
    keys = [f"p{p}" for p in PERCENTILES] + ["max"]
    return "  ".join(f"{key} {fmt.format(values.get(key, 0))}" for key in keys)
