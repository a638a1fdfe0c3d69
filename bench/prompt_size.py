"""Issue 28, item 8: the default prompt on a small local window, and llama.cpp's cache reuse
across directories.

Builds the first request `loopwright run "create hello.py"` sends (the built-in tools, the
default system prompt) against the fake model server posing as llama.cpp with a window of 8,192
tokens (compact prompt) and of 32,768 (the full one), in two different working directories.
Prints the characters of the system prompt and of the tool section; with `--llamacpp` it starts
the real Qwen2.5-Coder-0.5B server (loopwright.testing.llamacpp; the weights must be fetched),
counts the tokens of system prompt + tools as its own chat template renders them, and sends
both directories' requests (one token of output each) to read the server's own cache
statistics: how many prompt tokens of the second directory's request it reused.

    python bench/prompt_size.py
    python bench/prompt_size.py --llamacpp
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.testing import FakeModelServer, Reply

PROMPT = "create hello.py"


async def first_request(workdir: Path, window: int) -> dict[str, Any]:
    """The body of the first request a run of PROMPT in `workdir` sends."""
    with FakeModelServer([Reply("ok")], flavor="llamacpp", context_window=window) as server:
        agent = Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                      tools=default_tools(), workdir=str(workdir), stream=False)
        try:
            await agent.run(PROMPT)
        finally:
            await agent.aclose()
        body = server.model_requests[0].body
        assert body is not None
        return body


def post(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def prompt_tokens(root: str, body: dict[str, Any]) -> int:
    """Tokens of the system message and the tools as the server's template renders them (the
    rendered prompt with the system message and tools only)."""
    system = [m for m in body["messages"] if m["role"] == "system"][:1]
    rendered = post(f"{root}/apply-template", {"messages": system, "tools": body.get("tools")})
    return len(post(f"{root}/tokenize", {"content": rendered["prompt"]})["tokens"])


def cache_reuse(root: str, first: dict[str, Any], second: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens of `second`, of which reused from the cache) after sending `first`."""
    for body in (first, second):
        result = post(f"{root}/v1/chat/completions",
                      {**body, "max_tokens": 1, "stream": False, "cache_prompt": True})
    timings = result["timings"]
    return timings["prompt_n"] + timings.get("cache_n", 0), timings.get("cache_n", 0)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llamacpp", action="store_true", help="count and measure on the 0.5B")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        bodies = {window: [await first_request(Path(d), window) for d in (a, b)]
                  for window in (8192, 32768)}
    for window, (body, _) in bodies.items():
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        print(f"window {window}: {len(body.get('tools', []))} tools, system prompt "
              f"{len(system)} chars, tool section {len(json.dumps(body.get('tools', [])))} "
              f"chars, working directory in the system prompt: {a in system}")
    if not args.llamacpp:
        return
    from loopwright.testing.llamacpp import MODELS, LlamaCppServer, fetch_weights

    with LlamaCppServer(fetch_weights(MODELS["0.5b"]), ctx_size=8192) as server:
        for window, (first, second) in bodies.items():
            tokens = prompt_tokens(server.root_url, first)
            total, reused = cache_reuse(server.root_url, first, second)
            print(f"window {window}: system prompt + tools = {tokens} tokens (Qwen2.5 template); "
                  f"another directory: {reused} of {total} prompt tokens reused from the cache "
                  f"({100 * reused / total:.0f} %)")


if __name__ == "__main__":
    asyncio.run(main())
