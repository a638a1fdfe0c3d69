"""Helpers for the batch tests (fixtures are in conftest.py): a fake model server script whose
replies follow each task's prompt, and JSONL file helpers."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from loopwright.testing import Reply, call
from loopwright.testing.scripted import RecordedRequest, ScriptItem

GRADER_MARK = "You are a strict, fair reviewer"


class TaskScript:
    """A handler whose replies follow each task's prompt, so many runs can share one server:

    - `say TEXT` → the answer TEXT;
    - `read PATH` → a `read_file` call, then the file's contents (the tool result) as the answer;
    - `write PATH TEXT` → a `write_file` call, then the answer `wrote PATH`;
    - `wait say TEXT` → TEXT once `release` is set (the run stays in flight until then);
    - a grading request → `satisfied` when the graded answer contains "good", else `failed`.

    `most_at_once` is the highest number of model requests it was answering at the same time.
    """

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waiting = 0
        self.in_flight = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    async def __call__(self, request: RecordedRequest) -> ScriptItem:
        with self._lock:
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
        try:
            return await self._answer(request.body["messages"])
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, messages: list[dict[str, Any]]) -> ScriptItem:
        if GRADER_MARK in str(messages[0].get("content")):
            graded = messages[-1]["content"].rsplit("## Final answer", 1)[-1]
            verdict = "satisfied" if "good" in graded else "failed"
            return Reply(json.dumps({"verdict": verdict, "feedback": f"graded {verdict}"}))
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        words = prompt.split(" ")
        if words[0] == "wait":
            with self._lock:
                self.waiting += 1
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            words = words[1:]
        if words[0] in ("read", "write") and messages[-1]["role"] == "tool":
            done = messages[-1]["content"] if words[0] == "read" else f"wrote {words[1]}"
            return Reply(done)
        if words[0] == "read":
            return Reply(tool_calls=[call("read_file", {"path": words[1]})])
        if words[0] == "write":
            content = " ".join(words[2:])
            return Reply(tool_calls=[call("write_file", {"path": words[1], "content": content})])
        if words[0] == "say":
            return Reply(" ".join(words[1:]))
        return Reply(f"unscripted prompt {prompt!r}")


def write_tasks(path: Path, *tasks: dict[str, Any] | str) -> Path:
    """A JSONL tasks file; a str item is written as the raw line."""
    path.write_text("".join((t if isinstance(t, str) else json.dumps(t)) + "\n" for t in tasks),
                    encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
