"""How fast the SQLite session store writes and loads a long session.

Builds a session of N messages (default 10,000: user prompts, assistant replies with tool calls and
reasoning, tool results of a few hundred characters) in a fresh database in a temporary directory,
writing each message the way a run does (one INSERT and commit per message), then measures:

- append: mean time per message written (the per-message cost a run pays);
- load: `SQLiteStore.load()` of the whole session from a freshly opened database (best of R);
- resume: what `Agent(session_id=...)` does before its first request: lease, load, repair.

    python bench/session_load.py                  # 10,000 messages
    python bench/session_load.py --messages 50000 --repeat 5 --json

Target: a 10,000-message session loads in under a second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from loopwright.messages import Message, ToolCall, assistant, tool_result, user
from loopwright.store.recorder import SessionRecorder
from loopwright.store.sqlite import SQLiteStore

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

    resumes = []
    for _ in range(repeat):
        with SQLiteStore(path) as fresh:
            recorder = SessionRecorder(fresh, SESSION, model="bench-model")
            started = time.perf_counter()
            recorder.open(None, system_prompt="You are a benchmark.", prompt="")
            resumes.append(time.perf_counter() - started)
            recorder.release()
    return {
        "messages": count,
        "db_mb": round(path.stat().st_size / 1e6, 2),
        "append_ms_per_message": round(append_total / count * 1000, 4),
        "load_s_best": round(min(loads), 4),
        "load_s_median": round(statistics.median(loads), 4),
        "resume_s_best": round(min(resumes), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.messages, args.repeat, Path(tmp))
    if args.json:
        print(json.dumps(result))
    else:
        print(f"session of {result['messages']:,} messages, database {result['db_mb']} MB")
        print(f"  append  {result['append_ms_per_message']:.4f} ms per message "
              "(one INSERT + commit each)")
        print(f"  load    {result['load_s_best']:.3f} s best, "
              f"{result['load_s_median']:.3f} s median of {args.repeat}")
        print(f"  resume  {result['resume_s_best']:.3f} s (lease + load + repair)")
        verdict = "OK" if result["load_s_best"] < TARGET_SECONDS else "OVER TARGET"
        print(f"  target  load < {TARGET_SECONDS:.0f} s: {verdict}")
    if result["load_s_best"] >= TARGET_SECONDS:
        sys.exit(1)


if __name__ == "__main__":
    main()
