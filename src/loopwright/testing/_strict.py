"""What a real server rejects before it generates anything, so the fake rejects it too.

llama.cpp's server parses the arguments of every tool call in the history as JSON (its chat
templates need objects); one call whose arguments do not parse makes the whole request fail with
HTTP 500 and `Failed to parse tool call arguments as JSON: …`, every time it is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from loopwright.testing.scripted import WireFormat

LLAMACPP_ARGUMENTS_ERROR = "Failed to parse tool call arguments as JSON"


def llamacpp_rejection(fmt: WireFormat, body: dict[str, Any]) -> dict[str, Any] | None:
    """The body llama.cpp answers (with HTTP 500) to this request; None if it accepts it."""
    for arguments in _history_arguments(fmt, body):
        if isinstance(arguments, dict):
            continue  # Anthropic `input`: already an object
        try:
            json.loads(arguments if isinstance(arguments, str) else "")
        except json.JSONDecodeError as exc:
            message = (f"{LLAMACPP_ARGUMENTS_ERROR}: [json.exception.parse_error.101] parse error "
                       f"at line {exc.lineno}, column {exc.colno}: syntax error while parsing "
                       f"value - {exc.msg}; last read: '{str(arguments)[-40:]}'")
            return {"error": {"code": 500, "message": message, "type": "server_error"}}
    return None


def _history_arguments(fmt: WireFormat, body: dict[str, Any]) -> Iterator[Any]:
    if fmt == "chat_completions":
        for message in _dicts(body.get("messages")):
            for call in _dicts(message.get("tool_calls")):
                function = call.get("function")
                if isinstance(function, dict):
                    yield function.get("arguments")
    elif fmt == "responses":
        for item in _dicts(body.get("input")):
            if item.get("type") == "function_call":
                yield item.get("arguments")
    else:
        for message in _dicts(body.get("messages")):
            for block in _dicts(message.get("content")):
                if block.get("type") == "tool_use":
                    yield block.get("input")


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))
