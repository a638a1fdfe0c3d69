"""What a real server rejects before it generates anything, so the fake rejects it too.

llama.cpp's server parses the arguments of every tool call in the history as JSON (its chat
templates need objects); one call whose arguments do not parse makes the whole request fail with
HTTP 500 and `Failed to parse tool call arguments as JSON: …`, every time it is sent.
"""

from __future__ import annotations

import json
import re
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


# --- what the hosted providers reject (strict mode) ---------------------------------------------

# OpenAI's reasoning models (o1, o3, o4-mini, GPT-5…): written out here rather than taken from
# loopwright's profiles, so that the fake checks the client instead of agreeing with it
_OPENAI_REASONING = re.compile(r"^(?:openai/)?(?:o\d|gpt-5)")


def provider_rejection(fmt: WireFormat, body: dict[str, Any]) -> str | None:
    """Why the hosted provider would answer this request with HTTP 400 (None: it accepts it)."""
    model = body.get("model") if isinstance(body.get("model"), str) else ""
    if fmt == "chat_completions" and _OPENAI_REASONING.match(str(model)):
        if "max_tokens" in body:
            return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.")
        if body.get("temperature", 1) != 1:
            return (f"Unsupported value: 'temperature' does not support {body['temperature']} "
                    "with this model. Only the default (1) value is supported.")
    if fmt == "responses" and _OPENAI_REASONING.match(str(model)) \
            and body.get("temperature", 1) != 1:
        return "Unsupported parameter: 'temperature' is not supported with this model."
    if fmt == "anthropic_messages" and not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    schema_format = _json_schema_format(fmt, body)
    if schema_format is not None and schema_format.get("strict") is True:
        problem = _strict_schema_problem(schema_format.get("schema"), "()")
        if problem:
            return (f"Invalid schema for response_format '{schema_format.get('name')}': "
                    f"{problem}")
    return None


def _json_schema_format(fmt: WireFormat, body: dict[str, Any]) -> dict[str, Any] | None:
    if fmt == "chat_completions":
        response_format = body.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
            inner = response_format.get("json_schema")
            return inner if isinstance(inner, dict) else {}
    if fmt == "responses":
        text = body.get("text")
        fmt_obj = text.get("format") if isinstance(text, dict) else None
        if isinstance(fmt_obj, dict) and fmt_obj.get("type") == "json_schema":
            return fmt_obj
    return None


def _strict_schema_problem(node: Any, where: str) -> str | None:
    """OpenAI strict mode: every object closed and every property required."""
    if isinstance(node, list):
        for item in node:
            if problem := _strict_schema_problem(item, where):
                return problem
        return None
    if not isinstance(node, dict):
        return None
    properties = node.get("properties")
    if node.get("type") == "object" or isinstance(properties, dict):
        if node.get("additionalProperties") is not False:
            return (f"In context={where}, 'additionalProperties' is required to be supplied "
                    "and to be false.")
        missing = [key for key in (properties or {}) if key not in (node.get("required") or [])]
        if missing:
            return (f"In context={where}, 'required' is required to be supplied and to be an "
                    f"array including every key in properties. Missing '{missing[0]}'.")
    for key, value in node.items():
        if isinstance(value, (dict, list)) and (problem := _strict_schema_problem(
                value, f"{where}, '{key}'" if where != "()" else f"('{key}')")):
            return problem
    return None
