"""call_after_error (opt-in): after a failed call, a reply with no call is set aside and the
next reply is begun for the model with its chat template's call opening — only for a model whose
opening is known (Qwen2.5) on a server that continues a reply it is given (llama.cpp)."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints import servers
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.profiles import QWEN2_CALL_OPENING
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
REQUEST = "What is ACME's share price right now?"
QWEN = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
CHECK = ["auto", "call_after_error"]
attempts: list[str] = []


@tool(read_only=True)
def get_quote(symbol: str) -> str:
    """The latest share price of a stock."""
    attempts.append(symbol)
    if len(attempts) == 1:
        raise TimeoutError("quote service timed out; try again")
    return "41.37"


@pytest.fixture(autouse=True)
def fresh() -> None:
    attempts.clear()
    servers.forget_all()  # another test's fake server may have had the same port


async def run(script: list[Reply], *, model: str = QWEN, flavor: str = "llamacpp",
              **options: Any) -> tuple[Any, FakeModelServer, list[ReviewEvent]]:
    options.setdefault("review", CHECK)
    events: list[Event] = []
    with FakeModelServer(script, strict=False, flavor=flavor) as server:  # type: ignore[arg-type]
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[get_quote], callbacks=[events.append],
                             **options).run(REQUEST)
    return result, server, [e for e in events if isinstance(e, ReviewEvent)]


QUOTE = Reply(tool_calls=[call("get_quote", {"symbol": "ACME"})])
PROMISE_TEXT = ("I encountered a timeout error while trying to fetch the share price of ACME. "
                "I will retry the request.")
PROMISE = Reply(PROMISE_TEXT)


def last_message(server: FakeModelServer, index: int) -> dict[str, Any]:
    return dict(server.model_requests[index].body["messages"][-1])


async def test_a_promise_after_a_failed_call_is_set_aside_and_the_next_reply_begun_as_a_call(
        ) -> None:
    # replayed from Qwen2.5-Coder-1.5B on the dev2 split (quote_retry): after the timeout it
    # promised to retry and ended its turn; begun with `<tool_call>`, its reply was the call
    script = [QUOTE, PROMISE, QUOTE, Reply("ACME trades at 41.37.")]
    result, server, reviews = await run(script)
    assert result.output == "ACME trades at 41.37." and attempts == ["ACME", "ACME"]
    assert [(e.check, e.verdict, e.applied) for e in reviews] == [
        ("call_after_error", "set_aside", True)]
    begun = last_message(server, 2)
    assert begun == {"role": "assistant", "content": QWEN2_CALL_OPENING}
    sent = server.model_requests[2].body["messages"]
    assert not any(PROMISE_TEXT in str(m.get("content")) for m in sent)  # set aside
    assert sent[-2]["role"] == "tool"  # no note between the results and the begun reply
    # the request after the call's result is an ordinary one again
    assert last_message(server, 3)["role"] == "tool"


async def test_the_begun_reply_is_never_kept_in_the_history() -> None:
    script = [QUOTE, PROMISE, QUOTE, Reply("ACME trades at 41.37.")]
    result, _, _ = await run(script)
    contents = [m.content for m in result.messages]
    assert QWEN2_CALL_OPENING not in contents


@pytest.mark.parametrize("flavor", ["ollama", "vllm", "lmstudio", "openai"])
async def test_a_server_that_is_not_llamacpp_gets_no_begun_reply(flavor: str) -> None:
    # other servers do not continue a reply they are given, or need a flag to
    result, server, reviews = await run([QUOTE, PROMISE], flavor=flavor)
    assert result.output == PROMISE_TEXT and len(server.model_requests) == 2
    assert reviews == []


@pytest.mark.parametrize("model", ["gpt-4.1", "qwen3-4b", "llama-3.2-3b-instruct",
                                   "my-local-model"])
async def test_a_model_whose_call_opening_is_unknown_is_not_reviewed(model: str) -> None:
    result, server, reviews = await run([QUOTE, PROMISE], model=model, review="all",
                                        review_off=["after_error", "narration"])
    assert result.output == PROMISE_TEXT
    assert all(e.check != "call_after_error" for e in reviews)
    assert all(m["role"] != "assistant" or m.get("tool_calls")
               for m in server.model_requests[-1].body["messages"][2:])


async def test_under_auto_it_does_not_run() -> None:
    result, server, reviews = await run([QUOTE, PROMISE], review="auto")
    assert result.output == PROMISE_TEXT and len(server.model_requests) == 2
    assert reviews == []


async def test_an_answer_after_a_call_that_succeeded_is_the_answer() -> None:
    attempts.append("warm")  # the first call succeeds
    result, server, reviews = await run([QUOTE, Reply("ACME trades at 41.37.")])
    assert result.output == "ACME trades at 41.37." and len(server.model_requests) == 2
    assert reviews == []


async def test_a_good_answer_after_an_error_stands_when_the_budget_is_spent() -> None:
    answer = "The quote service timed out, so I cannot tell the price."
    script = [QUOTE, Reply(answer)]
    result, server, reviews = await run(script, review_budget=0)
    assert result.output == answer and len(server.model_requests) == 2
    assert reviews == []


async def test_each_firing_is_charged_to_the_budget() -> None:
    # the model answers after every error: set aside while the budget lasts, then it stands
    always_fails = [step for symbol in ("ACME", "ACM", "AC")
                    for step in (Reply(tool_calls=[call("get_quote", {"symbol": symbol})]),
                                 PROMISE)]

    @tool(read_only=True)
    def get_quote(symbol: str) -> str:
        """The latest share price of a stock."""
        raise TimeoutError("quote service timed out; try again")

    events: list[Event] = []
    with FakeModelServer(always_fails, strict=False, flavor="llamacpp") as server:
        result = await Agent(QWEN, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[get_quote], callbacks=[events.append],
                             review=CHECK, review_budget=2).run(REQUEST)
    reviews = [e for e in events if isinstance(e, ReviewEvent)]
    assert result.output == PROMISE_TEXT and len(server.model_requests) == 6
    assert [(e.check, e.applied, e.budget_left) for e in reviews] == [
        ("call_after_error", True, 1), ("call_after_error", True, 0)]


async def test_a_begun_call_the_server_did_not_read_is_read_from_the_text() -> None:
    # the server gives back only what the model wrote after the opening; with the opening in
    # front, the call markup is whole and read as a call
    rest = Reply('get_quote", "arguments": {"symbol": "ACME"}}\n</tool_call>')
    script = [QUOTE, PROMISE, rest, Reply("ACME trades at 41.37.")]
    result, server, _ = await run(script)
    assert result.output == "ACME trades at 41.37." and attempts == ["ACME", "ACME"]
    assert len(server.model_requests) == 4


async def test_a_begun_reply_that_is_no_call_is_an_answer_with_its_opening() -> None:
    # what the model wrote after the opening is no call: the answer is all of it, as written
    script = [QUOTE, PROMISE, Reply("nothing")]
    result, _, _ = await run(script)
    assert result.output == QWEN2_CALL_OPENING + "nothing"
