"""Batch runs: thousands of tasks from a JSONL file on one event loop, or on a Ray cluster.

    from loopwright.batch import run_batch

    report = await run_batch("tasks.jsonl", "out", concurrency=64, model="gpt-4o-mini",
                             trajectories="openai")
    print(report.summary.solved_share)

`loopwright batch TASKS.jsonl --out DIR` is the same from the command line. Each task line is
described in `loopwright.batch.tasks`, the checkers in `loopwright.batch.checkers`, the output
files in `loopwright.batch.results` and `loopwright.batch.trajectories`.
"""

from loopwright.batch.checkers import BUILTIN_CHECKERS, CheckInput, Verdict
from loopwright.batch.results import ResultRow
from loopwright.batch.runner import BatchReport, run_batch
from loopwright.batch.summary import BatchSummary, summary_table
from loopwright.batch.tasks import BadLine, TaskSpec
from loopwright.batch.trajectories import TRAJECTORY_FORMATS

__all__ = [
    "BUILTIN_CHECKERS",
    "TRAJECTORY_FORMATS",
    "BadLine",
    "BatchReport",
    "BatchSummary",
    "CheckInput",
    "ResultRow",
    "TaskSpec",
    "Verdict",
    "run_batch",
    "summary_table",
]
