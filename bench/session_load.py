"""How fast the SQLite session store writes and loads a long session.

Builds a session of N messages (default 10,000: user prompts, assistant replies with tool calls and
reasoning, tool results of a few hundred characters) in a fresh database in a temporary directory,
writing each message the way a run does (one INSERT and commit per message), then measures:

- append: mean time per message written (the per-message cost a run pays);
- load: `SQLiteStore.load()` of the whole session from a freshly opened database (best of R);
- resume: what `Agent(session_id=...)` does before its first request: lease, load, repair;
- show: `loopwright sessions show` of the first page, in this process after its imports (the
  target), and as a whole `loopwright` process (wall and CPU seconds, interpreter start and
  imports included); with `--show-all` also `sessions show --all` for comparison.

    python bench/session_load.py                  # 10,000 messages
    python bench/session_load.py --messages 50000 --repeat 5 --json

Targets: a 10,000-message session loads in under a second, and `sessions show` prints its first
page well under a second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopwright.messages import Message, ToolCall, assistant, tool_result, user
from loopwright.store.recorder import SessionRecorder
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import ThreadedStore

SESSION = "bench-session"
TARGET_SECONDS = 1.0


def conversation(count: int) -> list[Message]:
    """`count` messages in the shape of a coding session (turns of call → result → answer)."""
    out: list[Message] = []
    n = 0
    while len(out) < count:
        call = ToolCall(id=f"call_{n}", name="read_file",
                        arguments=json.dumps({"path": f"src/module_{n}.py", "offset": n}))
        turn = [
            user(f"Step {n}: look at module {n} and tell me what the parser does with input."),
            Message(role="assistant", content="", tool_calls=[call],
                    reasoning=f"I should read module {n} before answering. " * 3),
            tool_result(call, "\n".join(f"{k:>4}  def handler_{k}(data): return data[{k}]"
                                        for k in range(12))),
            assistant(f"Module {n} maps each input field through its handler; "
                      "nothing is validated before the lookup. " * 2),
        ]
        out.extend(turn)
        n += 1
    return out[:count]


def measure(count: int, repeat: int, directory: Path) -> dict[str, float]:
    path = directory / "sessions.db"
    history = conversation(count)
    store = SQLiteStore(path)
    store.create(SESSION, model="bench-model", title="benchmark")
    started = time.perf_counter()
    for message in history:
        store.append(SESSION, message)
    append_total = time.perf_counter() - started
    store.close()

    loads = []
    for _ in range(repeat):
        with SQLiteStore(path) as fresh:
            started = time.perf_counter()
            loaded = fresh.load(SESSION)
            loads.append(time.perf_counter() - started)
    if loaded != history:
        raise SystemExit("the loaded session differs from the one written")

    resumes = [asyncio.run(resume_once(path)) for _ in range(repeat)]
    pages = [show_in_process(path) for _ in range(repeat)]
    show = [show_once(path, all_messages=False) for _ in range(repeat)]
    return {
        "messages": count,
        "db_mb": round(path.stat().st_size / 1e6, 2),
        "append_ms_per_message": round(append_total / count * 1000, 4),
        "load_s_best": round(min(loads), 4),
        "load_s_median": round(statistics.median(loads), 4),
        "resume_s_best": round(min(resumes), 4),
        "show_first_page_s_best": round(min(pages), 4),
        "show_process_s_best": round(min(wall for wall, _ in show), 4),
        "show_process_cpu_s_best": round(min(cpu for _, cpu in show), 4),
    }


def show_in_process(path: Path) -> float:
    """Seconds `sessions show` takes to print the first page (output discarded)."""
    from loopwright.cli.sessions import show

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        started = time.perf_counter()
        show(SESSION, db=path)
        return time.perf_counter() - started


async def resume_once(path: Path) -> float:
    store = ThreadedStore(SQLiteStore(path))
    recorder = SessionRecorder(store, SESSION, model="bench-model")
    started = time.perf_counter()
    await recorder.open(None, system_prompt="You are a benchmark.", prompt="")
    elapsed = time.perf_counter() - started
    await recorder.release()
    await store.aclose()
    return elapsed


def show_once(path: Path, *, all_messages: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of `loopwright sessions show` in a fresh process, output discarded."""
    command = [sys.executable, "-m", "loopwright.cli.main", "sessions", "show", SESSION,
               "--db", str(path), *(["--all"] if all_messages else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")
    parser.add_argument("--show-all", action="store_true",
                        help="also time `sessions show --all` (every message rendered)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.messages, args.repeat, Path(tmp))
        if args.show_all:
            wall, cpu = show_once(Path(tmp) / "sessions.db", all_messages=True)
            result.update(show_all_s=round(wall, 3), show_all_cpu_s=round(cpu, 3))
    if args.json:
        print(json.dumps(result))
    else:
        print(f"session of {result['messages']:,} messages, database {result['db_mb']} MB")
        print(f"  append  {result['append_ms_per_message']:.4f} ms per message "
              "(one INSERT + commit each)")
        print(f"  load    {result['load_s_best']:.3f} s best, "
              f"{result['load_s_median']:.3f} s median of {args.repeat}")
        print(f"  resume  {result['resume_s_best']:.3f} s (lease + load + repair)")
        print(f"  show    {result['show_first_page_s_best']:.3f} s for the first page; a whole "
              f"`loopwright sessions show` process {result['show_process_s_best']:.3f} s wall, "
              f"{result['show_process_cpu_s_best']:.3f} s CPU (interpreter and imports too)")
        if args.show_all:
            print(f"  show --all  {result['show_all_s']:.3f} s wall, "
                  f"{result['show_all_cpu_s']:.3f} s CPU")
        ok = max(result["load_s_best"], result["show_first_page_s_best"]) < TARGET_SECONDS
        print(f"  target  load and first page < {TARGET_SECONDS:.0f} s: "
              f"{'OK' if ok else 'OVER TARGET'}")
    if result["load_s_best"] >= TARGET_SECONDS or \
            result["show_first_page_s_best"] >= TARGET_SECONDS:
        sys.exit(1)


if __name__ == "__main__":
    main()
