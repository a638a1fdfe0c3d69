"""OpenAI Chat Completions: OpenAI, OpenRouter, Ollama, llama.cpp, LM Studio, vLLM and friends."""

from __future__ import annotations

import json
from typing import Any

from loopwright.attachments import Attachment, refuse_unsupported
from loopwright.messages import (
    FinishReason,
    Message,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    Usage,
    any_attachments,
    assistant,
)
from loopwright.profiles import Profile, takes_reasoning_effort
from loopwright.wire import splice
from loopwright.wire.base import says_overflow, strip_boundary
from loopwright.wire.stream import PlainCall, StreamAccumulator, whole_reply

MODE = "chat_completions"
JSON_KEY = f"{MODE}/json"  # Message.wire_cache key of the message's JSON text
JOINED_KEY = f"{MODE}/joined"  # … of the joined JSON of the messages up to it (splice.Joined)
TOOL_FILES_KEY = f"{MODE}/tool_files"  # … of a tool result's files as user content parts

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "end_turn",
    "end_turn": "end_turn",
    "eos": "end_turn",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
}


def message_to_wire(msg: Message) -> dict[str, Any]:
    cached = msg.wire_cache.get(MODE)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    out: dict[str, Any]
    if msg.role == "tool":
        out = {"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content}
    elif msg.role == "assistant":
        out = {"role": "assistant", "content": msg.content or None}
        if msg.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in msg.tool_calls
            ]
        elif not msg.content:
            out["content"] = ""
    elif msg.role == "system":
        out = {"role": "system", "content": strip_boundary(msg.content)}
    elif msg.attachments:
        text = [{"type": "text", "text": msg.content}] if msg.content else []
        out = {"role": msg.role, "content": [*text, *attachment_parts(msg.attachments)]}
    else:
        out = {"role": msg.role, "content": msg.content}
    msg.wire_cache[MODE] = out
    return out


def _one_element(msg: Message) -> list[dict[str, Any]]:
    return [message_to_wire(msg)]


def _piece(msg: Message) -> str:
    return splice.cached_piece(msg, JSON_KEY, _one_element)


def attachment_parts(attachments: list[Attachment]) -> list[dict[str, Any]]:
    """Chat Completions content parts: `image_url` for images, `file` for PDFs."""
    return [{"type": "image_url", "image_url": {"url": a.data_url()}} if a.kind == "image"
            else {"type": "file", "file": {"filename": a.filename, "file_data": a.data_url()}}
            for a in attachments]


def _tool_attachments_as_user(history: list[Message],
                              wire_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tool message holds text only: what tools returned as images or PDFs follows the
    batch's last result as one user message (tool results must stay together)."""
    if not any_attachments(history, role="tool"):
        return wire_messages
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for msg, wire in zip(history, wire_messages, strict=True):
        if msg.role != "tool" and pending:
            out.append({"role": "user", "content": pending})
            pending = []
        out.append(wire)
        if msg.role == "tool" and msg.attachments:
            pending += _tool_file_parts(msg)
    if pending:
        out.append({"role": "user", "content": pending})
    return out


def _tool_file_parts(msg: Message) -> list[dict[str, Any]]:
    """A tool result's files as user content parts, cached on the message like its own wire
    form: each file is read and encoded once, not on every turn that resends it."""
    parts: list[dict[str, Any]] | None = msg.wire_cache.get(TOOL_FILES_KEY)
    if parts is None:
        parts = msg.wire_cache[TOOL_FILES_KEY] = [
            {"type": "text", "text": f"(attached by {msg.name or 'the tool'})"},
            *attachment_parts(msg.attachments)]
    return parts


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
    }
    if spec.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _tools_to_wire(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    return [tool_to_wire(spec) for spec in specs]


def usage_from_wire(data: dict[str, Any] | None) -> Usage:
    if not data:
        return Usage(requests=1)
    prompt_details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        cache_read_tokens=int(prompt_details.get("cached_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        requests=1,
    )


def content_parts(content: Any) -> tuple[str, str]:
    """(text, reasoning) of a message `content`: a string, or a list of chunks as Mistral's
    Magistral sends: `{"type": "text", "text": …}` and `{"type": "thinking", "thinking": [..]}`."""
    if content is None:
        return "", ""
    if isinstance(content, str):
        return content, ""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return str(content), ""
    text: list[str] = []
    reasoning: list[str] = []
    for chunk in content:
        if isinstance(chunk, str):
            text.append(chunk)
        elif isinstance(chunk, dict):
            if chunk.get("type") == "thinking":
                reasoning.append(content_parts(chunk.get("thinking"))[0])
            elif isinstance(chunk.get("text"), str):
                text.append(chunk["text"])
    return "".join(text), "".join(reasoning)


def _usage_of(chunk: dict[str, Any]) -> Any:
    # Groq streams its usage inside `x_groq`, not at the top level
    return chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")


def _reasoning_of(obj: dict[str, Any]) -> str | None:
    # DeepSeek / vLLM / llama.cpp use reasoning_content; OpenRouter and Ollama use reasoning
    value = obj.get("reasoning_content") or obj.get("reasoning")
    return value if isinstance(value, str) and value else None


class ChatCompletionsFormat(splice.SplicedBodyFormat):
    """JSON shapes of `/chat/completions`."""

    mode = MODE
    path = "/chat/completions"

    def _body(self, request: ModelRequest, stream: bool, profile: Profile) -> dict[str, Any]:
        refuse_unsupported(profile.supports_images, request.model, request.messages)
        history = request.messages
        if request.prefill:  # a last assistant message: the server continues it
            history = [*history, assistant(request.prefill)]
        messages_value: Any = splice.Spliced(
            lambda: splice.join_pieces(history, JOINED_KEY, _piece),
            lambda: [message_to_wire(m) for m in history],
        )
        tool_files = any_attachments(history, role="tool")
        if tool_files or not profile.supports_system_role:  # rare: a plain list, not spliced
            wire_messages = _tool_attachments_as_user(history,
                                                      [message_to_wire(m) for m in history])
            if not profile.supports_system_role:  # o1-mini
                wire_messages = _system_into_first_user(wire_messages)
            messages_value = wire_messages
        body: dict[str, Any] = {"model": request.model, "messages": messages_value}
        if request.tools:
            body["tools"] = splice.encoded_tools(MODE, request.tools, _tools_to_wire)
            if request.tool_choice:
                body["tool_choice"] = request.tool_choice
            if not profile.parallel_tool_calls:
                body["parallel_tool_calls"] = False
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if request.max_tokens is not None:  # o-series / GPT-5: max_completion_tokens
            body[profile.max_tokens_field] = request.max_tokens
        if request.temperature is not None and profile.supports_temperature:
            body["temperature"] = request.temperature
        if request.reasoning_effort and takes_reasoning_effort(profile):
            if profile.reasoning_field == "reasoning":
                body["reasoning"] = {"effort": request.reasoning_effort}
            else:
                body[profile.reasoning_field] = request.reasoning_effort
        if request.response_format:
            body["response_format"] = request.response_format
        if request.extra_body:
            body.update(request.extra_body)
        return body

    def parse_body(self, body: dict[str, Any]) -> ModelResponse:
        choices = body.get("choices") or []
        choice = choices[0] if choices else {}
        wire_msg = choice.get("message") or {}
        calls: list[PlainCall] = []
        for wire_call in wire_msg.get("tool_calls") or []:
            function = wire_call.get("function") or {}
            calls.append((wire_call.get("id") or "", function.get("name") or "",
                          function.get("arguments") or "{}"))
        text, inline_reasoning = content_parts(wire_msg.get("content"))
        refusal = wire_msg.get("refusal")
        parts = [(True, inline_reasoning or _reasoning_of(wire_msg) or ""),
                 (False, text or (refusal if isinstance(refusal, str) else ""))]
        finish = FINISH_REASONS.get(choice.get("finish_reason") or "")
        if isinstance(refusal, str) and refusal:  # OpenAI's structured refusal
            finish = "content_filter"
        return whole_reply(parts, calls, finish_reason=finish,
                           usage=usage_from_wire(_usage_of(body)),
                           model=body.get("model") or "")

    def stream_parser(self) -> ChatCompletionsStreamParser:
        return ChatCompletionsStreamParser()


class ChatCompletionsStreamParser:
    """Feeds `chat.completion.chunk` events into the accumulator."""

    def __init__(self) -> None:
        self.finished = False
        self.refused = False  # the reply came as `refusal` deltas
        # index -> accumulator key; a server that reuses index 0 for a second call with a new id
        # (seen with some local servers) gets a fresh key so the calls do not merge
        self._keys: dict[int, int | str] = {}
        self._ids: dict[int | str, str] = {}

    def feed(self, event: str | None, data: str, acc: StreamAccumulator) -> None:
        if data == "[DONE]":
            self.finished = True
            return
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            return
        if "error" in chunk and not chunk.get("choices"):
            from loopwright.errors import ContextOverflowError, StreamError

            text = f"the server sent an error mid-stream: {chunk['error']}"
            if says_overflow(text):
                raise ContextOverflowError(text, body=data)
            raise StreamError(text, retryable=True)
        usage = _usage_of(chunk)
        if usage:
            acc.usage = usage_from_wire(usage)
        if chunk.get("model"):
            acc.model = chunk["model"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            if delta:
                text, inline_reasoning = content_parts(delta.get("content"))
                reasoning = inline_reasoning or _reasoning_of(delta)
                if reasoning:
                    acc.reasoning(reasoning)
                if text:
                    acc.text(text)
                refusal = delta.get("refusal")
                if isinstance(refusal, str) and refusal:
                    self.refused = True
                    acc.text(refusal)
                for position, call in enumerate(delta.get("tool_calls") or ()):
                    self._feed_call(position, call, acc)
            finish = choice.get("finish_reason")
            if finish:
                acc.finish_reason = FINISH_REASONS.get(finish, "end_turn")
            if self.refused and acc.finish_reason is not None:
                acc.finish_reason = "content_filter"

    def _feed_call(self, position: int, call: dict[str, Any], acc: StreamAccumulator) -> None:
        index = call.get("index")
        if not isinstance(index, int):
            index = position
        call_id = call.get("id") or None
        key = self._keys.get(index, index)
        known_id = self._ids.get(key)
        if call_id and known_id and call_id != known_id:
            key = f"{index}:{call_id}"
            self._keys[index] = key
        if call_id:
            self._ids[key] = call_id
        function = call.get("function") or {}
        acc.tool_call_delta(
            key,
            id=call_id,
            name=function.get("name") or None,
            arguments=function.get("arguments") or None,
        )


def _system_into_first_user(wire_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For models without a system role: the system text opens the first user message."""
    system = [m["content"] for m in wire_messages
              if m.get("role") == "system" and isinstance(m.get("content"), str)]
    rest = [m for m in wire_messages if m.get("role") != "system"]
    if not system:
        return rest
    preface = "\n\n".join(system)
    for n, message in enumerate(rest):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                rest[n] = {**message, "content": f"{preface}\n\n{content}"}
            else:
                rest[n] = {**message, "content": [{"type": "text", "text": preface},
                                                  *(content or [])]}
            return rest
    return [{"role": "user", "content": preface}, *rest]
