"""answer_by_call (opt-in): every reply that may call tools is begun as a call, and the answer
is a call of `final_answer` — for Qwen2.5 on llama.cpp only; elsewhere the setting does
nothing."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints import servers
from loopwright.endpoints.retry import RetryPolicy
from loopwright.profiles import QWEN2_CALL_OPENING
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
QWEN = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
REQUEST = "What is ACME's share price right now?"


@tool(read_only=True)
def get_quote(symbol: str) -> str:
    """The latest share price of a stock."""
    return "41.37" if symbol == "ACME" else "unknown"


@pytest.fixture(autouse=True)
def fresh() -> None:
    servers.forget_all()


async def run(script: list[Reply], *, model: str = QWEN, flavor: str = "llamacpp",
              **options: Any) -> tuple[Any, FakeModelServer]:
    options.setdefault("answer_by_call", True)
    with FakeModelServer(script, strict=False, flavor=flavor) as server:  # type: ignore[arg-type]
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[get_quote], **options).run(REQUEST)
    return result, server


QUOTE = Reply(tool_calls=[call("get_quote", {"symbol": "ACME"})])
ANSWER = Reply(tool_calls=[call("final_answer", {"answer": "ACME trades at 41.37."})])


def tool_names(server: FakeModelServer, index: int) -> list[str]:
    return [t["function"]["name"] for t in server.model_requests[index].body.get("tools", [])]


async def test_every_reply_is_begun_as_a_call_and_the_answer_is_final_answers_argument() -> None:
    result, server = await run([QUOTE, ANSWER])
    assert result.output == "ACME trades at 41.37." and result.stop_reason == "completed"
    for index in (0, 1):
        body = server.model_requests[index].body
        assert body["messages"][-1] == {"role": "assistant", "content": QWEN2_CALL_OPENING}
        assert tool_names(server, index) == ["get_quote", "final_answer"]
    # the history holds the answer as text, as any answer: a later run reads no final_answer call
    assert result.messages[-1].role == "assistant" and not result.messages[-1].tool_calls
    assert result.messages[-1].content == "ACME trades at 41.37."


async def test_final_answer_beside_other_calls_is_dropped_and_they_run() -> None:
    both = Reply(tool_calls=[call("get_quote", {"symbol": "ACME"}),
                             call("final_answer", {"answer": "I do not know yet."})])
    result, server = await run([both, ANSWER])
    assert result.output == "ACME trades at 41.37." and len(server.model_requests) == 2
    assert "41.37" in str(server.model_requests[1].body["messages"])


async def test_a_final_answer_written_as_text_is_read() -> None:
    # what llama.cpp gives back when it did not read the call: the text after the opening
    rest = Reply('final_answer", "arguments": {"answer": "ACME trades at 41.37."}}\n</tool_call>')
    result, _ = await run([QUOTE, rest])
    assert result.output == "ACME trades at 41.37."


async def test_an_answer_with_tools_off_is_not_begun() -> None:
    # the last round asks for an answer without tools: no opening, no final_answer
    result, server = await run([QUOTE, Reply("ACME trades at 41.37.")], max_turns=2)
    assert result.output == "ACME trades at 41.37."
    last = server.model_requests[-1].body
    assert last["messages"][-1]["role"] != "assistant"
    assert "final_answer" not in tool_names(server, 1)


@pytest.mark.parametrize(("model", "flavor"), [("gpt-4.1", "llamacpp"), (QWEN, "ollama"),
                                               (QWEN, "openai"), ("llama-3.2-3b", "llamacpp")])
async def test_elsewhere_the_setting_does_nothing(model: str, flavor: str) -> None:
    result, server = await run([QUOTE, Reply("ACME trades at 41.37.")], model=model,
                               flavor=flavor)
    assert result.output == "ACME trades at 41.37."
    for index in (0, 1):
        assert tool_names(server, index) == ["get_quote"]
        assert server.model_requests[index].body["messages"][-1]["role"] != "assistant"


async def test_off_by_default() -> None:
    result, server = await run([QUOTE, Reply("ACME trades at 41.37.")], answer_by_call=False)
    assert result.output == "ACME trades at 41.37."
    assert tool_names(server, 0) == ["get_quote"]
