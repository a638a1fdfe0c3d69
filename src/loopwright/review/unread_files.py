"""The unread-file check: an answer about a file that no tool has opened.

Small local models answer a question about a named file from what such files usually hold: "The
port number set in config.ini is 8080." (Qwen2.5-Coder-0.5B, with `read_file` offered and
config.ini saying 8417), "The version recorded in package.json is 1.0.0.", or `add(2, 3)` for
"numbers.txt holds two numbers". When a run's final answer comes while the request names a file
that no call in the conversation has taken as an argument, and a tool that takes a path is
offered, the answer is set aside (later requests leave it out: shown its own guess, the 0.5B
writes it again) and the model is told, once per run, which call to make (twice, when the reply
to the note repeats the note). Measured on the 0.5B with the guess set aside: the note naming
the call got the `read_file` call for each of six such tasks, in native and prompt mode; a note
without the example call, or with the guess left in view, mostly got the note or the guess back.

A named file counts when it exists in the workspace (so "What is Node.js?" costs nothing): a
structural signal, the same in any language — no word of the request or the answer is read. A
request with a fenced block carries what its answer needs. Opt-in (`review = "all"` or named;
never under "auto"): written for small local models (Qwen2.5-Coder 0.5B/1.5B); a frontier model
may rightly answer about a file from the request alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import notes
from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, set_aside
from loopwright.tools.examples import PATH_PARAMS, named_files

if TYPE_CHECKING:
    from loopwright.messages import Message
    from loopwright.review.view import ReviewView

_READ_WORDS = ("read", "view", "cat", "open", "show", "get")


def touched(name: str, history: Sequence[Message], tools: Collection[str]) -> bool:
    """Whether any call of one of `tools` in the conversation took `name` in its arguments (a
    read, an edit, a shell command naming it), or the user attached it. A call of a tool that
    does not exist never ran (the 1.5B asked `grep` for config.ini, then apologised)."""
    for message in history:
        if any(name in call.arguments and call.name in tools for call in message.tool_calls):
            return True
        if any(a.name == name or (a.path or "").endswith(name) for a in message.attachments):
            return True
    return False


def reading_tool(tools: Collection[str], schema_of: Callable[[str], dict[str, Any] | None]
                 ) -> tuple[str, str] | None:
    """The offered tool to read a file with, and its path parameter: one whose name says it
    reads, else the first that takes a path; None when no tool takes a path."""
    found: list[tuple[str, str]] = []
    for name in sorted(tools):
        properties = (schema_of(name) or {}).get("properties") or {}
        param = next((p for p in PATH_PARAMS if isinstance(properties.get(p), dict)
                      and properties[p].get("type") == "string"), None)
        if param is not None:
            found.append((name, param))
    reads = [f for f in found if any(w in f[0].lower() for w in _READ_WORDS)]
    return (reads or found)[0] if found else None


def unread_feedback(files: list[str], tool: str, param: str) -> str:
    """What the model reads instead of its guess: the files and the call to make."""
    example = json.dumps({"name": tool, "arguments": {param: files[0]}}, ensure_ascii=False)
    return notes.render(notes.UNREAD_FILE, files=", ".join(files), tool=tool, example=example)


_REPEATS_NOTE = [f[:40] for f in notes.NOTES[notes.UNREAD_FILE].fragments()]  # a part is enough


class UnreadFile(Check):
    """Sets aside, once per run, a final answer about a file no tool has read; a second time
    only for a reply that repeats the note itself, which is no answer at all (the 0.5B, told to
    read b.txt, described the call and wrote the note's first sentence for a.txt). An answer
    asked for without tools is checked too (the 0.5B, told to answer from add(2, 3) → 5, said
    "The sum of 2 and 3 is 5."): the next request has tools again — unless this was the last
    round (its request goes without tools)."""

    name = "unread_file"
    reads_prose = True

    def __init__(self) -> None:
        self.nudges = 0

    def for_run(self) -> Check:
        return UnreadFile()

    async def review(self, view: ReviewView) -> Verdict | None:
        lowered = " ".join(view.answer.split()).lower()
        repeats_note = any(f in lowered for f in _REPEATS_NOTE)
        if self.nudges >= (2 if repeats_note else 1) or view.turn >= view.max_turns:
            return None
        if "```" in view.request:  # the user pasted what the answer needs
            return None
        unread = [n for n in named_files(view.request)
                  if not touched(n, view.history, view.tools)]
        tool = reading_tool(view.tools, view.schema_of) if unread else None
        if tool is None:
            return None
        unread = await asyncio.to_thread(_existing, view.workdir, unread)
        if not unread:
            return None
        self.nudges += 1
        return set_aside(unread_feedback(unread, *tool),
                         f"the request named {', '.join(unread)}, which no tool had read")


def _existing(workdir: Path, names: list[str]) -> list[str]:
    out = []
    for name in names:
        try:
            if (workdir / Path(name).expanduser()).is_file():
                out.append(name)
        except OSError:  # a name too long for the file system is no file
            continue
    return out
