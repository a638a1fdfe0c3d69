"""A provider refusal (Anthropic `stop_reason: "refusal"`, Chat Completions / Responses
`content_filter`) is a refusal with the model's text: stop reason `refused`, never an "empty
reply" retried and turned into an error. The CLI exits with status 7 and prints the text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import DoneEvent, Event
from loopwright.testing import FakeModelServer, Fault, Reply

Recorded = Callable[[str], Any]
FAST = RetryPolicy(base_delay=0.01, jitter=0)


def agent_for(server: FakeModelServer, **kwargs: Any) -> Agent:
    return Agent("any-model", base_url=server.base_url, api_key="k", retry=FAST, **kwargs)


async def test_anthropic_documented_refusal_body_is_a_refusal_with_its_text(
        recorded: Recorded) -> None:
    body = json.loads(recorded("anthropic_docs_streaming_refusal.json"))
    events: list[Event] = []
    with FakeModelServer(replies=[Fault.status(200, body)]) as server:
        agent = agent_for(server, api_mode="anthropic_messages", stream=False,
                          callbacks=[events.append])
        result = await agent.run("hi")
    assert result.stop_reason == "refused" and result.output == "Hello.."
    assert len(server.model_requests) == 1
    assert isinstance(events[-1], DoneEvent)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api_mode", ["chat_completions", "anthropic_messages", "responses"])
@pytest.mark.parametrize("text", ["", "I can't help with that."])
async def test_a_refusal_is_never_an_empty_reply(api_mode: str, stream: bool, text: str) -> None:
    with FakeModelServer(replies=[Reply(text, finish_reason="content_filter")]) as server:
        result = await agent_for(server, api_mode=api_mode, stream=stream).run("x")
    assert result.stop_reason == "refused"
    assert result.output == text
    assert result.error is None
    assert len(server.model_requests) == 1  # not retried as an empty reply


def test_the_cli_exits_7_on_a_refusal_and_prints_the_text(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOOPWRIGHT_", "XDG_", "OPENAI", "ANTHROPIC", "OPENROUTER"))}
    env["HOME"] = str(tmp_path)
    with FakeModelServer([Reply("I can't help with that.", finish_reason="content_filter")]
                         ) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "x", "--model", "fake-model",
             "--base-url", server.base_url], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=60)
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout == "I can't help with that.\n"
    assert "refused" in proc.stderr


REFUSAL = "I'm sorry, I can't help with that."


async def test_an_openai_structured_refusal_field_is_a_refusal(replay: Any) -> None:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": None, "refusal": REFUSAL}}]}
    with FakeModelServer(replies=[Fault.status(200, body)]) as server:
        result = await agent_for(server, stream=False).run("x")
    assert (result.stop_reason, result.output) == ("refused", REFUSAL)
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None,
                                                   "refusal": ""}}]},
              *({"choices": [{"index": 0, "delta": {"refusal": part}}]}
                for part in ("I'm sorry, ", "I can't help with that.")),
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    out = await replay("chat_completions", sse)
    assert out.response.finish_reason == "content_filter"
    assert out.response.message.content == REFUSAL
