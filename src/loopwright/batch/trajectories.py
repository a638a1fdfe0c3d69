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
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from loopwright.messages import Message
from loopwright.wire import chat_completions
from loopwright.wire.base import strip_boundary

TrajectoryFormat = Literal["openai", "sharegpt", "messages"]
TRAJECTORY_FORMATS: tuple[str, ...] = get_args(TrajectoryFormat)
TRAJECTORIES_FILE = "trajectories.jsonl"


def trajectory(fmt: str, *, task_id: str, history: list[Message], tools: list[dict[str, Any]],
               meta: dict[str, Any]) -> dict[str, Any]:
    """One run as a JSON-ready dict in format `fmt`. `tools`: each offered tool as
    `{"name", "description", "parameters"}`."""
    history = [_as_sent(message) for message in history]
    if fmt == "openai":
        body = {"messages": [chat_completions.message_to_wire(m) for m in history],
                "tools": [{"type": "function", "function": spec} for spec in tools]}
    elif fmt == "sharegpt":
        body = _sharegpt(history, tools)
    elif fmt == "messages":
        body = {"messages": [m.to_dict() for m in history], "tools": tools}
    else:
        raise ValueError(f"unknown trajectory format {fmt!r}; use one of "
                         f"{', '.join(TRAJECTORY_FORMATS)}")
    return {"id": task_id, **body, "meta": meta}


def _as_sent(message: Message) -> Message:
    if message.role != "system":
        return message
    return Message(role="system", content=strip_boundary(message.content))


def _sharegpt(history: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
    system = "\n\n".join(m.content for m in history if m.role == "system")
    turns: list[dict[str, Any]] = []
    results: list[str] = []
    for message in history:
        if message.role != "tool" and results:
            turns.append(_observation(results))
            results = []
        if message.role == "user":
            turns.append({"from": "human", "value": message.content})
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
            turns.append({"from": "gpt", "value": message.content})
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
