"""Minimal hand-written agent loops over raw httpx, one per API mode: the baseline that
bench/overhead.py compares loopwright against. Deliberately bare: no retries, no validation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

SYSTEM = "You are a benchmark agent."
SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
HEADERS = {"authorization": "Bearer k", "x-api-key": "k", "anthropic-version": "2023-06-01"}


def lookup(key: str) -> str:
    return f"value-of-{key}"


# The tool runs inline, blocking the loop while it runs (the floor the issue names); True runs it
# on a worker thread as `asyncio.to_thread` does, as a loop that never blocks must run a plain
# `def` tool (bench/overhead.py --threaded-floor)
TOOL_IN_THREAD = False


async def _sse(response: httpx.Response) -> Any:
    event = None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            yield event, line[6:]


async def chat_loop(client: httpx.AsyncClient, base_url: str, prompt: str, *, stream: bool,
                    rounds: int, on_turn: Callable[[], None] | None = None) -> int:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": prompt}]
    tools = [{"type": "function", "function": {"name": "lookup", "description": "Look a key up.",
                                               "parameters": SCHEMA}}]
    url = base_url + "/chat/completions"
    turns = 0
    while True:
        turns += 1
        if on_turn is not None:
            on_turn()
        body: dict[str, Any] = {"model": "bench-model", "messages": messages, "tools": tools}
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
            text: list[str] = []
            calls: dict[int, dict[str, Any]] = {}
            async with client.stream("POST", url, json=body, headers=HEADERS) as response:
                async for _, data in _sse(response):
                    if data == "[DONE]":
                        continue  # read to the end so the connection is reused
                    for choice in json.loads(data).get("choices") or []:
                        delta = choice.get("delta") or {}
                        if delta.get("content"):
                            text.append(delta["content"])
                        for tc in delta.get("tool_calls") or []:
                            slot = calls.setdefault(tc["index"], {"id": "", "name": "", "args": ""})
                            slot["id"] = tc.get("id") or slot["id"]
                            fn = tc.get("function") or {}
                            slot["name"] = fn.get("name") or slot["name"]
                            slot["args"] += fn.get("arguments") or ""
            tool_calls = [{"id": c["id"], "type": "function",
                           "function": {"name": c["name"], "arguments": c["args"]}}
                          for c in calls.values()]
            message = {"role": "assistant", "content": "".join(text) or None}
        else:
            response = await client.post(url, json=body, headers=HEADERS)
            message = response.json()["choices"][0]["message"]
            tool_calls = message.get("tool_calls") or []
        if not tool_calls:
            return turns
        message["tool_calls"] = tool_calls
        messages.append(message)
        for tc in tool_calls:
            args = json.loads(tc["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": tc["id"],
                             "content": (await asyncio.to_thread(lookup, **args))
                             if TOOL_IN_THREAD else lookup(**args)})


async def anthropic_loop(client: httpx.AsyncClient, base_url: str, prompt: str, *, stream: bool,
                         rounds: int, on_turn: Callable[[], None] | None = None) -> int:
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    tools = [{"name": "lookup", "description": "Look a key up.", "input_schema": SCHEMA}]
    url = base_url + "/messages"
    turns = 0
    while True:
        turns += 1
        if on_turn is not None:
            on_turn()
        body: dict[str, Any] = {"model": "bench-model", "system": SYSTEM, "messages": messages,
                                "tools": tools, "max_tokens": 1024}
        if stream:
            body["stream"] = True
            blocks: dict[int, dict[str, Any]] = {}
            async with client.stream("POST", url, json=body, headers=HEADERS) as response:
                async for event, data in _sse(response):
                    payload = json.loads(data)
                    if event == "content_block_start":
                        block = dict(payload["content_block"])
                        block["_json"] = ""
                        blocks[payload["index"]] = block
                    elif event == "content_block_delta":
                        block, delta = blocks[payload["index"]], payload["delta"]
                        if delta["type"] == "text_delta":
                            block["text"] = block.get("text", "") + delta["text"]
                        elif delta["type"] == "input_json_delta":
                            block["_json"] += delta["partial_json"]
            content = []
            for block in blocks.values():
                raw = block.pop("_json")
                if block["type"] == "tool_use":
                    block["input"] = json.loads(raw or "{}")
                content.append(block)
        else:
            response = await client.post(url, json=body, headers=HEADERS)
            content = response.json()["content"]
        uses = [b for b in content if b["type"] == "tool_use"]
        if not uses:
            return turns
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"],
             "content": (await asyncio.to_thread(lookup, **b["input"])) if TOOL_IN_THREAD
             else lookup(**b["input"])}
            for b in uses]})


async def responses_loop(client: httpx.AsyncClient, base_url: str, prompt: str, *, stream: bool,
                         rounds: int, on_turn: Callable[[], None] | None = None) -> int:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": prompt}]
    tools = [{"type": "function", "name": "lookup", "description": "Look a key up.",
              "parameters": SCHEMA}]
    url = base_url + "/responses"
    turns = 0
    while True:
        turns += 1
        if on_turn is not None:
            on_turn()
        body: dict[str, Any] = {"model": "bench-model", "instructions": SYSTEM, "input": items,
                                "tools": tools, "store": False}
        if stream:
            body["stream"] = True
            output: list[dict[str, Any]] = []
            async with client.stream("POST", url, json=body, headers=HEADERS) as response:
                async for event, data in _sse(response):
                    if event in ("response.completed", "response.incomplete"):
                        output = json.loads(data)["response"]["output"]
        else:
            response = await client.post(url, json=body, headers=HEADERS)
            output = response.json()["output"]
        calls = [item for item in output if item["type"] == "function_call"]
        if not calls:
            return turns
        for call in calls:
            items.append({"type": "function_call", "call_id": call["call_id"],
                          "name": call["name"], "arguments": call["arguments"]})
            items.append({"type": "function_call_output", "call_id": call["call_id"],
                          "output": (await asyncio.to_thread(
                              lookup, **json.loads(call["arguments"]))) if TOOL_IN_THREAD
                          else lookup(**json.loads(call["arguments"]))})


HandLoop = Callable[..., Awaitable[int]]
HAND_LOOPS: dict[str, HandLoop] = {
    "chat_completions": chat_loop,
    "anthropic_messages": anthropic_loop,
    "responses": responses_loop,
}
