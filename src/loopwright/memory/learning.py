"""Memory learning (`memory_learning`, opt-in): when a run completes, a side call on the memory
model (`memory_model`, default the main model) reads the run and names durable facts about the
project and preferences of the user; each becomes an entry of MEMORY.md or USER.md tagged with
the session it came from, skipped when an entry already says it or the file is full, and
refused when it reads as an instruction to the agent (a hostile transcript can plant those).

It runs after the answer as background work (`memory.background`): the run's result and its
terminal event are out before it starts, and its failure is only logged and reported. Its
`status` events (`memory_learned`) and its `model_call` record come after the terminal event
and are stored with the session.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopwright import messages
from loopwright.arguments import ArgumentsError, parse_arguments
from loopwright.errors import LoopwrightError
from loopwright.grading import condense_transcript
from loopwright.messages import ModelRequest
from loopwright.plugins import LoopPlugin, RunView

if TYPE_CHECKING:
    from loopwright.builtin.memory import MemoryFiles, Target
    from loopwright.memory.background import BackgroundWork
    from loopwright.result import RunResult

MAX_ITEMS = 5
MAX_ITEM_CHARS = 300
TRANSCRIPT_CHARS = 16_000
MAX_REPLY_CHARS = 20_000  # five short items need far less; more is not the JSON asked for
# A transcript can hold a hostile page or file that steers the memory model into writing orders
# for every later session; an item that reads like one (or carries markup that could close the
# prompt's framing) is refused. A fact is a statement, never a command to the agent.
_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(instructions?|rules?|prompts?|guidelines)\b"
    r"|\b(system|developer)\s*(prompt|mode|message)\b|^\s*(system|assistant)\s*:"
    r"|\byou are now\b|\b(always|never)\s+(approve|obey)\b"
    r"|</?\s*(system|memory|user|assistant|instructions?|skill|recall|tool)\b[^>]*>"
    r"|<\||\|>|\bcurl\b[^|]*\|\s*(ba|z)?sh\b",
    re.IGNORECASE)
EXTRACT_PROMPT = """\
You maintain the long-term memory of an AI agent. Read the transcript of one finished session and
pick out what will still be true and useful in future sessions:
- target "memory": durable facts about the project or environment (build and test commands,
  conventions, where things live, pitfalls that were found);
- target "user": lasting preferences of the user (style, tools, how they like to work).
Never the task itself, its progress or results, anything temporary, guesses, or secrets (keys,
passwords, tokens). Skip anything the existing memory already says. Most sessions teach nothing
durable: then reply with an empty list.
Reply with one JSON object and nothing else:
{"memories": [{"target": "memory" | "user", "text": "one short sentence"}]}"""


@dataclass(frozen=True, slots=True)
class Learned:
    target: Target
    text: str


class MemoryLearning(LoopPlugin):
    """Starts the extraction when a top-level run completes (see the module docstring)."""

    def __init__(self, files: MemoryFiles, background: BackgroundWork) -> None:
        self.files = files
        self.background = background

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        if result.stop_reason != "completed" or run.agent_tag:
            return  # learn from finished work only; a sub-agent's run is part of its parent's
        self.background.start(self.learn(run), what="memory learning")

    async def learn(self, run: RunView) -> None:
        try:
            existing = await asyncio.to_thread(self.files.view)
            reply = await run.call_model(_request(run, existing), purpose="memory")
            items = parse_memories(reply.message.content)
        except (LoopwrightError, ValueError) as exc:
            run.status("memory_learned", f"memory learning failed: {exc}", {"error": str(exc)})
            return
        outcomes: dict[str, list[str]] = {"added": [], "duplicate": [], "full": [], "empty": [],
                                          "refused": []}
        for item in items:
            if looks_like_instruction(item.text):
                outcomes["refused"].append(f"{item.target}: {item.text}")
                continue
            outcome = await asyncio.to_thread(self.files.learn, item.target, item.text,
                                              session_id=run.session_id)
            outcomes[outcome].append(f"{item.target}: {item.text}")
        added = outcomes["added"]
        run.status("memory_learned",
                   f"learned {len(added)} memor{'y' if len(added) == 1 else 'ies'}"
                   + (f" ({len(outcomes['duplicate'])} already known)"
                      if outcomes["duplicate"] else "")
                   + (f" ({len(outcomes['full'])} not saved: the file is full)"
                      if outcomes["full"] else "")
                   + (f" ({len(outcomes['refused'])} refused: they read as instructions)"
                      if outcomes["refused"] else ""),
                   {"added": added, "duplicates": outcomes["duplicate"], "full": outcomes["full"],
                    "refused": outcomes["refused"], "session_id": run.session_id})


def _request(run: RunView, existing: str) -> ModelRequest:
    transcript = condense_transcript(
        [m for m in run.history if m.role != "system"], limit=TRANSCRIPT_CHARS)
    return ModelRequest(model=run.model, messages=[
        messages.system(EXTRACT_PROMPT),
        messages.user(f"## Existing memory\n{existing}\n\n## Session transcript\n{transcript}\n\n"
                      "Reply with the JSON object only."),
    ])


def parse_memories(text: str) -> list[Learned]:
    """The items of the memory model's reply (hostile: each one checked, at most `MAX_ITEMS`,
    each one line of at most `MAX_ITEM_CHARS`); `ValueError` when it is not the JSON asked for."""
    if len(text) > MAX_REPLY_CHARS:
        raise ValueError(f"the memory model's reply is {len(text):,} characters, over the "
                         f"{MAX_REPLY_CHARS:,} limit; nothing saved")
    try:
        data: Any = parse_arguments(text).value
    except ArgumentsError as exc:
        raise ValueError(f"the memory model's reply is not JSON: {text[:120]!r}") from exc
    raw = data.get("memories") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ValueError("the memory model's reply has no 'memories' list")
    found: list[Learned] = []
    for item in raw[:MAX_ITEMS]:
        if not isinstance(item, dict):
            continue
        target, body = item.get("target", "memory"), item.get("text")
        if target not in ("memory", "user") or not isinstance(body, str):
            continue
        line = " ".join(body.split())
        if line and len(line) <= MAX_ITEM_CHARS:
            found.append(Learned(target=target, text=line))
    return found


def looks_like_instruction(text: str) -> bool:
    """Whether a learned item reads as an order to the agent rather than a fact (or hides
    something: a control or invisible character, such as a terminal escape or bidi override)."""
    import unicodedata

    return _INSTRUCTION.search(text) is not None or any(
        unicodedata.category(c) in ("Cc", "Cf") for c in text)
