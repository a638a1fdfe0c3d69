"""The unread-file nudge: an answer about a file that no tool has opened.

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

A named file counts when it exists in the workspace, or when the request asks to read it ("What
does missing.txt say? Read it."), so that "What is Node.js?" costs nothing; a request with a
fenced block carries what its answer needs.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.guards import UNREAD_NOTE_MARK
from loopwright.plugins import LoopPlugin
from loopwright.tools.examples import PATH_PARAMS, named_files

if TYPE_CHECKING:
    from loopwright.messages import Message
    from loopwright.plugins import RunView

_ASKS_TO_READ = re.compile(r"\b(?:read|open|cat|says?|contents?|contains?)\b", re.IGNORECASE)
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
    return (f"You have not read {', '.join(files)} yet: {UNREAD_NOTE_MARK}, so your answer "
            f"was a guess and was set aside. Call {tool} on it now, for example {example}, "
            "then answer from its result.")


class UnreadFileNudge(LoopPlugin):
    """Sends back, once per run, a final answer about a file no tool has read; a second time
    only for a reply that repeats the note itself, which is no answer at all (the 0.5B, told to
    read b.txt, described the call and wrote the note's first sentence for a.txt)."""

    def __init__(self, *, tool_names: Callable[[], Collection[str]],
                 schema_of: Callable[[str], dict[str, Any] | None]) -> None:
        self.tool_names = tool_names
        self.schema_of = schema_of
        self.nudges = 0

    def for_run(self, run: RunView) -> LoopPlugin:
        return UnreadFileNudge(tool_names=self.tool_names, schema_of=self.schema_of)

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        # an answer asked for without tools is nudged too (the 0.5B, told to answer from
        # add(2, 3) → 5, said "The sum of 2 and 3 is 5."): the next request has tools again —
        # unless this was the last round (its request goes without tools)
        repeats_note = UNREAD_NOTE_MARK in answer.lower()
        if self.nudges >= (2 if repeats_note else 1) or run.turn >= run.settings.max_turns:
            return None
        if "```" in run.request:  # the user pasted what the answer needs
            return None
        tools = self.tool_names()
        unread = [n for n in named_files(run.request) if not touched(n, run.history, tools)]
        tool = reading_tool(tools, self.schema_of) if unread else None
        if tool is None:
            return None
        if not _ASKS_TO_READ.search(run.request):
            workdir = run.settings.workdir
            unread = await asyncio.to_thread(_existing, workdir, unread)
        if not unread:
            return None
        self.nudges += 1
        run.set_aside_answer()
        run.status("unread_file_nudge", f"the request named {', '.join(unread)}, which no tool "
                   "had read, and the model answered; asking it to read first", {"files": unread})
        return unread_feedback(unread, *tool)


def _existing(workdir: Path, names: list[str]) -> list[str]:
    out = []
    for name in names:
        try:
            if (workdir / Path(name).expanduser()).is_file():
                out.append(name)
        except OSError:  # a name too long for the file system is no file
            continue
    return out
