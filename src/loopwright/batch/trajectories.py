"""Trajectories: each run's conversation as one JSON line, ready for fine-tuning or analysis.

Formats (`--trajectories`):

- `openai` — `{"id", "messages", "tools"}` in OpenAI's chat fine-tuning shape: assistant
  `tool_calls` (`type: function`, arguments as a JSON string), `tool` messages with their
  `tool_call_id`, and the tools offered as `{"type": "function", "function": {…}}`.
- `sharegpt` — `{"id", "system", "conversations", "tools"}` with turns `human`, `gpt`,
  `function_call` (the call as `{"name", "arguments"}` JSON, or a JSON list of them for a reply
  with several calls; text the model wrote beside its calls is kept as `thought`) and
  `observation` (the result; a JSON list of results after several calls); `tools` is a JSON
  string, as LLaMA-Factory reads it.
- `messages` — `{"id", "messages", "tools"}` in loopwright's own message form (`Message.to_dict`:
  reasoning, error flags and provider data included).

Every format starts from the system prompt exactly as it was sent (the cache-boundary marker
taken out) and carries the task id, stop reason and verdict under `"meta"`.

The runtime's interventions are marked, so they do not teach a model to write them: an
assistant reply the review stage set aside or sent back gets `"weight": 0` (`openai`; OpenAI's
fine-tuning skips it), `"set_aside": true` (`messages`) or `"weight": 0` (`sharegpt`); a user
turn the runtime wrote (feedback, "continue") gets `"runtime_note": true` (`messages`,
`sharegpt`); `meta.interventions` lists both by message index. `interventions="drop"` leaves
both out instead.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from loopwright.messages import Message
from loopwright.notes import is_runtime_note, is_set_aside
from loopwright.wire import chat_completions
from loopwright.wire.base import strip_boundary

TrajectoryFormat = Literal["openai", "sharegpt", "messages"]
TRAJECTORY_FORMATS: tuple[str, ...] = get_args(TrajectoryFormat)
TRAJECTORIES_FILE = "trajectories.jsonl"
Interventions = Literal["mark", "drop"]
INTERVENTIONS: tuple[str, ...] = get_args(Interventions)


def trajectory(fmt: str, *, task_id: str, history: list[Message], tools: list[dict[str, Any]],
               meta: dict[str, Any], interventions: str = "mark") -> dict[str, Any]:
    """One run as a JSON-ready dict in format `fmt`. `tools`: each offered tool as
    `{"name", "description", "parameters"}`. `interventions`: "mark" or "drop" (module doc)."""
    history = [_as_sent(message) for message in history]
    replies, notes = intervened(history)
    if interventions == "drop":
        history = [m for n, m in enumerate(history) if n not in replies | notes]
        replies, notes = set(), set()
    elif interventions != "mark":
        raise ValueError(f"unknown interventions {interventions!r}; use mark or drop")
    if fmt == "openai":
        wire = [chat_completions.message_to_wire(m) for m in history]
        body = {"messages": [{**w, "weight": 0} if n in replies else w
                             for n, w in enumerate(wire)],
                "tools": [{"type": "function", "function": spec} for spec in tools]}
    elif fmt == "sharegpt":
        body = _sharegpt(history, tools, replies, notes)
    elif fmt == "messages":
        body = {"messages": [_flagged(m.to_dict(), n, replies, notes)
                             for n, m in enumerate(history)], "tools": tools}
    else:
        raise ValueError(f"unknown trajectory format {fmt!r}; use one of "
                         f"{', '.join(TRAJECTORY_FORMATS)}")
    marked = {"interventions": {"set_aside": sorted(replies), "runtime_notes": sorted(notes)}}
    return {"id": task_id, **body, "meta": {**meta, **(marked if replies or notes else {})}}


def intervened(history: list[Message]) -> tuple[set[int], set[int]]:
    """The indices of the assistant replies the runtime set aside or sent back (a runtime note
    answers them), and of the user turns the runtime wrote. The task is the user's, whatever
    its words ("Do not call any tool now. What is 2 + 2?" begins like a note): it is never
    taken for a note by its text."""
    task = next((n for n, m in enumerate(history) if m.role == "user"), None)
    notes = {n for n, m in enumerate(history) if is_runtime_note(m)
             and (n != task or "runtime_note" in m.marks)}
    replies = {n for n, m in enumerate(history) if m.role == "assistant" and (
        is_set_aside(m) or (n + 1 in notes and not m.tool_calls))}
    return replies, notes


def _flagged(wire: dict[str, Any], n: int, replies: set[int], notes: set[int]
             ) -> dict[str, Any]:
    if n in replies:
        return {**wire, "set_aside": True}
    if n in notes:
        return {**wire, "runtime_note": True}
    return wire


def _as_sent(message: Message) -> Message:
    if message.role != "system":
        return message
    return Message(role="system", content=strip_boundary(message.content))


def _sharegpt(history: list[Message], tools: list[dict[str, Any]], replies: set[int],
              notes: set[int]) -> dict[str, Any]:
    system = "\n\n".join(m.content for m in history if m.role == "system")
    turns: list[dict[str, Any]] = []
    results: list[str] = []
    for n, message in enumerate(history):
        if message.role != "tool" and results:
            turns.append(_observation(results))
            results = []
        if message.role == "user":
            turns.append({"from": "human", "value": message.content,
                          **({"runtime_note": True} if n in notes else {})})
        elif message.role == "assistant" and message.tool_calls:
            calls = [{"name": c.name, "arguments": _arguments(c.arguments)}
                     for c in message.tool_calls]
            turn: dict[str, Any] = {"from": "function_call",
                                    "value": json.dumps(calls[0] if len(calls) == 1 else calls,
                                                        ensure_ascii=False)}
            if message.content:
                turn["thought"] = message.content
            turns.append(turn)
        elif message.role == "assistant":
            turns.append({"from": "gpt", "value": message.content,
                          **({"weight": 0} if n in replies else {})})
        elif message.role == "tool":
            results.append(message.content)
    if results:
        turns.append(_observation(results))
    return {"system": system, "conversations": turns,
            "tools": json.dumps(tools, ensure_ascii=False)}


def _observation(results: list[str]) -> dict[str, Any]:
    value = results[0] if len(results) == 1 else json.dumps(results, ensure_ascii=False)
    return {"from": "observation", "value": value}


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, TypeError):
        return raw  # kept as the model wrote it: the trajectory shows what happened
