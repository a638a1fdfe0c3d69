"""`loopwright batch TASKS.jsonl --out DIR`: run many tasks at once (see `loopwright.batch`).

Exit codes: 0 the batch ran (whatever the tasks' verdicts: read the summary), 2 usage error,
6 configuration error (an unknown checker or tool, no model provider), 130 interrupted (finished
tasks are kept; `--resume` continues).
"""

from __future__ import annotations

import asyncio
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from loopwright.cli.options import AgentFlags, with_agent_flags

EXIT_CONFIG = 6  # as `loopwright run`
EXIT_INTERRUPTED = 130
# `run`'s flags that mean nothing for many independent tasks (each has its own workspace and
# session; the batch has its own --tools)
NOT_FOR_BATCH = ("show_reasoning", "workdir", "resume", "continue_last", "tools", "read_only")


class TrajectoryChoice(StrEnum):
    """The format of `trajectories.jsonl`."""

    openai = "openai"
    sharegpt = "sharegpt"
    messages = "messages"


@with_agent_flags(exclude=NOT_FOR_BATCH)
def batch_command(
    tasks: Annotated[Path, typer.Argument(
        exists=True, dir_okay=False, help="JSONL file: one task per line (id, prompt, …).",
        show_default=False)],
    out: Annotated[Path, typer.Option(
        "--out", "-o", file_okay=False, help="Directory for results.jsonl, trajectories.jsonl, "
        "summary.json and the task workspaces.", show_default=False)],
    concurrency: Annotated[int, typer.Option(
        "--concurrency", "-c", min=1, help="Tasks running at once (per worker with --ray).")]
    = 16,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the batch in --out: skip tasks already in results.jsonl.")]
    = False,
    retry_failed: Annotated[bool, typer.Option(
        "--retry-failed", help="With --resume: run failed tasks again too.")] = False,
    trajectories: Annotated[TrajectoryChoice | None, typer.Option(
        "--trajectories", help="Also write each run's conversation to trajectories.jsonl in "
        "this format.")] = None,
    drop_interventions: Annotated[bool, typer.Option(
        "--drop-interventions", help="Leave the runtime's notes and the replies it set aside or "
        "sent back out of trajectories.jsonl (default: marked, weight 0).")] = False,
    checker: Annotated[str | None, typer.Option(
        "--checker", help="Default checker for tasks with 'expected' and no 'checker': exact, "
        "contains, regex, rubric or module:function.")] = None,
    tools: Annotated[str | None, typer.Option(
        "--tools", help="Comma-separated default tools (built-in names or module:attribute); "
        "default: every built-in tool.")] = None,
    workspaces: Annotated[Path | None, typer.Option(
        "--workspaces", file_okay=False, help="Make the task workspaces in this directory and "
        "keep them (default: a temporary directory; each is removed when its task ends).")]
    = None,
    ray: Annotated[str | None, typer.Option(
        "--ray", help="Run on a Ray cluster: auto (the one this machine belongs to), its "
        "address, or local (a new one here). Needs pip install 'loopwright[ray]'.")] = None,
    ray_workers: Annotated[int | None, typer.Option(
        "--ray-workers", min=1, help="Ray workers (actors), each running --concurrency tasks "
        "(default: one per node).")] = None,
    no_progress: Annotated[bool, typer.Option(
        "--no-progress", help="No progress bar (it is drawn only on a terminal anyway).")]
    = False,
    *,
    flags: AgentFlags,
) -> None:
    """Run every task of a JSONL file, many at once, each in its own workspace copy.

    Writes OUT/results.jsonl as tasks finish (stop reason, verdict, turns, tokens, cost, wall
    time, session id), then prints a summary. Interrupted or killed, it continues with --resume.
    """
    from loopwright.batch import run_batch, summary_table
    from loopwright.cli.inert import InertConsole as Console  # task text may hold escapes
    from loopwright.errors import ConfigError, LoopwrightError

    if retry_failed and not resume:
        raise typer.BadParameter("--retry-failed continues a batch: add --resume",
                                 param_hint="--retry-failed")
    # nobody answers approval or clarify prompts for thousands of runs at once
    options = {key: value for key, value in flags.agent_options().items()
               if key not in ("tools", "approval", "clarify")}
    console = Console(stderr=True)
    try:
        report = asyncio.run(run_batch(
            tasks, out, concurrency=concurrency, resume=resume, retry_failed=retry_failed,
            trajectories=trajectories.value if trajectories else None, checker=checker,
            interventions="drop" if drop_interventions else "mark",
            tools=_toolset(tools), workspaces=workspaces,
            progress=not no_progress and console.is_terminal, console=console,
            ray=ray, ray_workers=ray_workers, **options))
    except ConfigError as exc:
        _say(str(exc))
        raise typer.Exit(EXIT_CONFIG) from None
    except LoopwrightError as exc:
        _say(str(exc))
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        _say(f"interrupted; finished tasks are in {out / 'results.jsonl'} — continue with "
             "--resume")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    Console().print(summary_table(report.summary))
    print(f"results: {out / 'results.jsonl'}", file=sys.stderr)


def _toolset(tools: str | None) -> list[str]:
    from loopwright.builtin import TOOL_NAMES

    if tools is None:
        return list(TOOL_NAMES)
    return [name.strip() for name in tools.split(",") if name.strip()]


def _say(text: str) -> None:
    from loopwright.cli.inert import inert

    print(f"loopwright: {inert(text)}", file=sys.stderr, flush=True)
