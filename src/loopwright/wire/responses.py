"""OpenAI Responses (`/v1/responses`): input items, flat function tools, typed stream events.

Stateless by default: every turn sends the full input and `store: false`, so nothing depends on
server-side state (previous_response_id) and a run can move between providers at any turn.

Reasoning items are kept in `Message.provider_data["responses"]["output"]` (with the message and
function-call items as position markers) and sent back on later turns. Stateless mode can only
send back what the client holds, so a reasoning item goes back only with its `encrypted_content`
(requested through `include` whenever `reasoning_effort` is set) and without its server `id`,
which would name an item that was never stored. Items whose calls no longer match the message's
tool calls are stale and dropped.
"""

from __future__ import annotations

import json
from typing import Any

from loopwright.attachments import Attachment, refuse_unsupported
from loopwright.errors import ContextOverflowError, ProviderError, StreamError
from loopwright.messages import (
    FinishReason,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from loopwright.profiles import Profile, takes_reasoning_effort
from loopwright.wire import splice
from loopwright.wire.base import says_overflow, strip_boundary
from loopwright.wire.stream import PlainCall, StreamAccumulator, whole_reply

MODE = "responses"
JSON_KEY = f"{MODE}/json"  # Message.wire_cache key of the message's items as JSON text
JOINED_KEY = f"{MODE}/joined"  # … of the joined JSON of the items up to it (splice.Joined)
# … of the first system message: the instructions and their JSON (the same text every turn)
INSTRUCTIONS_KEY = f"{MODE}/instructions"
_LONE_KEY = f"{MODE}/lone-instructions"  # a lone system message's text, boundary taken out

INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# error codes of a failed response that will fail the same way if retried
_FATAL_PREFIXES = ("invalid", "unsupported")


# --- internal → wire --------------------------------------------------------------------------


def message_to_items(msg: Message) -> list[dict[str, Any]]:
    """The input items of one message (cached on the message; callers must not mutate it)."""
    cached = msg.wire_cache.get(MODE)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    items: list[dict[str, Any]]
    if msg.role == "tool":
        items = [{"type": "function_call_output", "call_id": msg.tool_call_id,
                  "output": msg.content}]
        if msg.attachments:  # the output is text: the files follow as a user message
            items.append({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": f"(attached by {msg.name or 'the tool'})"},
                *input_parts(msg.attachments)]})
    elif msg.role == "assistant":
        items = _assistant_items(msg)
    elif msg.attachments:
        text = [{"type": "input_text", "text": msg.content}] if msg.content else []
        items = [{"type": "message", "role": "user",
                  "content": [*text, *input_parts(msg.attachments)]}]
    else:  # user, or a late system note
        items = [{"type": "message", "role": "user", "content": msg.content}]
    msg.wire_cache[MODE] = items
    return items


def input_parts(attachments: list[Attachment]) -> list[dict[str, Any]]:
    """Responses content parts: `input_image` and `input_file`."""
    return [{"type": "input_image", "image_url": a.data_url()} if a.kind == "image"
            else {"type": "input_file", "filename": a.filename, "file_data": a.data_url()}
            for a in attachments]


def _assistant_items(msg: Message) -> list[dict[str, Any]]:
    calls = {c.id: _call_item(c) for c in msg.tool_calls}
    text = [_text_item(msg.content)] if msg.content else []
    stored = (msg.provider_data.get(MODE) or {}).get("output")
    if not stored or not _same_calls(stored, msg.tool_calls):
        return [*text, *calls.values()]
    out: list[dict[str, Any]] = []
    for item in stored:
        kind = item["type"]
        if kind == "reasoning":
            if item.get("encrypted_content"):
                out.append(item)
        elif kind == "message":
            out.extend(text)
            text = []  # several message items were joined into one content; send it once
        elif kind == "function_call":
            out.append(calls[item["call_id"]])
    return [*out, *text]


def _text_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text}


def _call_item(call: ToolCall) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call.id, "name": call.name,
            "arguments": call.arguments}


def _same_calls(stored: list[dict[str, Any]], calls: list[ToolCall]) -> bool:
    ids = [item.get("call_id") for item in stored if item["type"] == "function_call"]
    return ids == [c.id for c in calls]


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    # `strict` is sent even when false: the Responses API defaults it to true, which rejects
    # ordinary schemas (optional properties, no additionalProperties: false)
    return {"type": "function", "name": spec.name, "description": spec.description,
            "parameters": spec.parameters, "strict": spec.strict}


def _tools_to_wire(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    return [tool_to_wire(spec) for spec in specs]


def _tool_choice(choice: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def conversation_to_wire(messages: list[Message]) -> tuple[str, splice.Spliced]:
    """(instructions, the input items as an array spliced from per-message JSON)."""
    if len(messages) > 1 and messages[0].role == "system" and messages[1].role != "system":
        instructions, start = _lone_instructions(messages[0]), 1  # the usual request
    else:
        system: list[str] = []
        start = 0
        while start < len(messages) and messages[start].role == "system":
            system.append(strip_boundary(messages[start].content))
            start += 1
        instructions = "\n\n".join(s for s in system if s)
    rest = messages[start:]

    def objects() -> list[dict[str, Any]]:
        return [item for msg in rest for item in message_to_items(msg)]

    return instructions, splice.Spliced(
        lambda: splice.join_pieces(rest, JOINED_KEY, _piece), objects)


def _lone_instructions(first: Message) -> str:
    """The instructions of a request with one system message: its text without the cache
    boundary, kept on it (every turn asks; the text is the whole system prompt, scanned and
    copied again each time otherwise), and the same object every turn, so the check of
    `_encoded_instructions` is one of identity."""
    kept: str | None = first.wire_cache.get(_LONE_KEY)
    if kept is None:
        kept = first.wire_cache[_LONE_KEY] = strip_boundary(first.content)
    return kept


def _piece(msg: Message) -> str:
    return splice.cached_piece(msg, JSON_KEY, message_to_items)


def _encoded_instructions(first: Message, instructions: str) -> splice.Encoded:
    """The instructions as JSON, kept on the first (system) message while they stay the same."""
    kept = first.wire_cache.get(INSTRUCTIONS_KEY)
    if kept is None or kept[0] != instructions:
        kept = first.wire_cache[INSTRUCTIONS_KEY] = (instructions, splice.dumps(instructions))
    return splice.Encoded(kept[1])


# --- wire → internal --------------------------------------------------------------------------


def usage_from_wire(data: dict[str, Any] | None) -> Usage:
    """`input_tokens` already includes the cached part here."""
    if not data:
        return Usage(requests=1)
    input_details = data.get("input_tokens_details") or {}
    output_details = data.get("output_tokens_details") or {}
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
        cache_read_tokens=int(input_details.get("cached_tokens") or 0),
        reasoning_tokens=int(output_details.get("reasoning_tokens") or 0),
        requests=1,
    )


def finish_reason_of(response: dict[str, Any]) -> FinishReason:
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason") or ""
        return INCOMPLETE_REASONS.get(reason, "length")
    return "end_turn"  # the accumulator turns it into tool_calls when there are calls


def failure_of(response: dict[str, Any], *, streaming: bool) -> ProviderError:
    """The error for a `failed` response; retryable unless the request itself is at fault."""
    error = response.get("error") or {}
    code = str(error.get("code") or "server_error")
    retryable = not code.startswith(_FATAL_PREFIXES)
    message = f"the response failed: {code}: {error.get('message') or ''}".rstrip(": ")
    if says_overflow(message):  # code `context_length_exceeded`: shrunk, not retried
        return ContextOverflowError(message, body=json.dumps(response))
    if streaming:
        return StreamError(message, retryable=retryable)
    return ProviderError(message, retryable=retryable)


def _marker(item: dict[str, Any]) -> dict[str, Any] | None:
    """What is kept of an output item: reasoning whole, the others as position markers."""
    kind = item.get("type")
    if kind == "reasoning":
        kept = {"type": "reasoning", "summary": item.get("summary") or []}
        if item.get("encrypted_content"):
            kept["encrypted_content"] = item["encrypted_content"]
        return kept
    if kind == "message":
        return {"type": "message"}
    if kind == "function_call":
        return {"type": "function_call", "call_id": item.get("call_id") or ""}
    return None


def _kept(output: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What a reply keeps of its output: the markers, when they hold reasoning (sent back in
    its place)."""
    if any(item["type"] == "reasoning" for item in output):
        return {MODE: {"output": output}}
    return None


def _store(acc: StreamAccumulator, output: list[dict[str, Any]]) -> None:
    kept = _kept(output)
    if kept is not None:
        acc.provider_data = kept


def _summary_text(item: dict[str, Any]) -> str:
    """The readable reasoning of a reasoning item: its summary, or the raw `reasoning_text`
    content that open-weight servers (DeepSeek, Bedrock gpt-oss, OpenRouter) send instead."""
    parts = [p.get("text") or "" for p in item.get("summary") or ()]
    if not any(parts):
        parts = [p.get("text") or "" for p in item.get("content") or ()
                 if isinstance(p, dict) and p.get("type") == "reasoning_text"]
    return "\n\n".join(p for p in parts if p)


def _message_text(item: dict[str, Any]) -> tuple[str, bool]:
    """(text, refused) of an output message."""
    texts: list[str] = []
    refused = False
    for part in item.get("content") or ():
        if part.get("type") == "refusal":
            refused = True
            texts.append(part.get("refusal") or "")
        else:
            texts.append(part.get("text") or "")
    return "".join(texts), refused


class ResponsesFormat(splice.SplicedBodyFormat):
    """JSON shapes of `/responses`."""

    mode = MODE
    path = "/responses"

    def _body(self, request: ModelRequest, stream: bool, profile: Profile) -> dict[str, Any]:
        refuse_unsupported(profile.supports_images, request.model, request.messages)
        instructions, items = conversation_to_wire(request.messages)
        body: dict[str, Any] = {"model": request.model, "input": items, "store": False}
        if instructions:
            body["instructions"] = _encoded_instructions(request.messages[0], instructions)
        if request.tools:
            body["tools"] = splice.encoded_tools(MODE, request.tools, _tools_to_wire)
            if request.tool_choice:
                body["tool_choice"] = _tool_choice(request.tool_choice)
            if not profile.parallel_tool_calls:
                body["parallel_tool_calls"] = False
        if stream:
            body["stream"] = True
        if request.max_tokens is not None:
            body["max_output_tokens"] = request.max_tokens
        if request.temperature is not None and profile.supports_temperature:
            body["temperature"] = request.temperature
        if request.reasoning_effort and takes_reasoning_effort(profile):
            body["reasoning"] = {"effort": request.reasoning_effort, "summary": "auto"}
            body["include"] = [ENCRYPTED_REASONING]
        if request.response_format:  # Responses flattens chat's json_schema wrapper
            body["text"] = {"format": {"type": "json_schema",
                                       **request.response_format["json_schema"]}}
        if request.extra_body:
            body.update(request.extra_body)
        return body

    def parse_body(self, body: dict[str, Any]) -> ModelResponse:
        if body.get("status") == "failed":
            raise failure_of(body, streaming=False)
        items = body.get("output") or ()
        parts: list[tuple[bool, str]] = []  # (is it reasoning, its text), in order
        calls: list[PlainCall] = []
        refused = reasoning = False
        for item in items:
            kind = item.get("type")
            if kind == "message":
                text, refusal = _message_text(item)
                parts.append((False, text))
                refused = refused or refusal
            elif kind == "reasoning":
                parts.append((True, _summary_text(item)))
                reasoning = True
            elif kind == "function_call":
                calls.append((item.get("call_id"), item.get("name"),
                              item.get("arguments") or "{}"))
        # the markers are kept only to send reasoning back in its place
        kept = (_kept([m for item in items if (m := _marker(item)) is not None]) if reasoning
                else None)
        return whole_reply(parts, calls,
                           finish_reason="content_filter" if refused else finish_reason_of(body),
                           usage=usage_from_wire(body.get("usage")),
                           model=body.get("model") or "", provider_data=kept)

    def stream_parser(self) -> ResponsesStreamParser:
        return ResponsesStreamParser()


class ResponsesStreamParser:
    """Feeds Responses SSE events (`response.created` … `response.completed`) into the accumulator.

    Tool calls are keyed by `output_index`. Text or reasoning that arrives only in
    `response.output_item.done` (no deltas) is taken from there, so terse servers work too.
    """

    def __init__(self) -> None:
        self.finished = False
        self._output: list[dict[str, Any]] = []
        self._streamed: set[int] = set()  # output indexes whose text/summary came as deltas
        self._summary_at: tuple[int, int] | None = None
        self._refused = False

    def feed(self, event: str | None, data: str, acc: StreamAccumulator) -> None:
        if data == "[DONE]":  # OpenRouter ends its Responses streams the Chat Completions way
            self.finished = True
            return
        payload = json.loads(data)
        kind = payload.get("type") or event or ""
        if kind == "response.output_text.delta":
            self._streamed.add(payload.get("output_index", -1))
            acc.text(payload["delta"])
        elif kind == "response.function_call_arguments.delta":
            acc.tool_call_delta(payload["output_index"], arguments=payload["delta"])
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self._reasoning_delta(payload, acc)
        elif kind == "response.function_call_arguments.done":
            acc.set_tool_call_arguments(payload["output_index"], payload["arguments"])
        elif kind == "response.output_item.added":
            item = payload["item"]
            if item.get("type") == "function_call":
                acc.tool_call_delta(payload["output_index"], id=item.get("call_id"),
                                    name=item.get("name"))
        elif kind == "response.output_item.done":
            self._item_done(payload["output_index"], payload["item"], acc)
        elif kind == "response.refusal.delta":
            self._refused = True
            self._streamed.add(payload.get("output_index", -1))
            acc.text(payload["delta"])
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(payload["response"], acc)
        elif kind in ("response.created", "response.in_progress"):
            acc.model = (payload.get("response") or {}).get("model") or acc.model
        elif kind == "response.failed":
            raise failure_of(payload.get("response") or {}, streaming=True)
        elif kind == "error":
            message = payload.get("message") or (payload.get("error") or {}).get("message")
            text = f"the server sent an error mid-stream: {message or data[:200]}"
            if says_overflow(text):
                raise ContextOverflowError(text, body=data)
            raise StreamError(text, retryable=True, body=data)

    def _reasoning_delta(self, payload: dict[str, Any], acc: StreamAccumulator) -> None:
        index = payload.get("output_index", -1)
        at = (index, payload.get("summary_index", payload.get("content_index", 0)))
        if self._summary_at is not None and at != self._summary_at:
            acc.reasoning("\n\n")  # a new summary part or reasoning item
        self._summary_at = at
        self._streamed.add(index)
        acc.reasoning(payload["delta"])

    def _item_done(self, index: int, item: dict[str, Any], acc: StreamAccumulator) -> None:
        kind = item.get("type")
        if kind == "function_call":
            acc.tool_call_delta(index, id=item.get("call_id"), name=item.get("name"))
            if item.get("arguments"):
                acc.set_tool_call_arguments(index, item["arguments"])
        elif kind == "message" and index not in self._streamed:
            text, refused = _message_text(item)
            self._refused = self._refused or refused
            acc.text(text)
        elif kind == "reasoning" and index not in self._streamed:
            acc.reasoning(_summary_text(item))
        marker = _marker(item)
        if marker is not None:
            self._output.append(marker)
            _store(acc, self._output)

    def _finish(self, response: dict[str, Any], acc: StreamAccumulator) -> None:
        acc.finish_reason = "content_filter" if self._refused else finish_reason_of(response)
        acc.usage = usage_from_wire(response.get("usage"))
        acc.model = response.get("model") or acc.model
        self.finished = True
