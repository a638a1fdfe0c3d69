"""A plain (unstreamed) reply is built without the stream accumulator when its text holds no
think tag (wire/stream.py `whole_reply`): in every API mode the reply must be the one an
accumulator fed the same parts in the body's order builds — text and reasoning pieces with and
without `<think>` tags (split, cut, only closing), calls without ids, names or arguments, and
ids repeated."""

import itertools
import random
from typing import Any

import pytest

from loopwright.messages import ModelResponse
from loopwright.wire import get_wire_format
from loopwright.wire.anthropic_messages import usage_from_wire as anthropic_usage
from loopwright.wire.chat_completions import usage_from_wire as chat_usage
from loopwright.wire.responses import usage_from_wire as responses_usage
from loopwright.wire.stream import StreamAccumulator

PIECES = ["", " ", "\n", "Hello", "an answer.", "<think>", "</think>", "<thi", "nk>", "<",
          "<think>plan it</think>\n\nThe answer", "thought</think>answer", "  <think>x"]
IDS = [None, "", "call_a", "call_a", "toolu_1"]
NAMES = [None, "", "lookup", "read"]
ARGS = [None, "", "{}", '{"key": "k"}']


def _reply(rng: random.Random) -> tuple[list[tuple[bool, str]], list[tuple[Any, Any, Any]]]:
    parts = [(rng.random() < 0.3, rng.choice(PIECES)) for _ in range(rng.randrange(0, 4))]
    calls = [(rng.choice(IDS), rng.choice(NAMES), rng.choice(ARGS))
             for _ in range(rng.randrange(0, 3))]
    return parts, calls


def _expected(parts: list[tuple[bool, str]], calls: list[tuple[Any, Any, Any]],
              finish: Any, usage: Any, model: str) -> ModelResponse:
    acc = StreamAccumulator()
    for reasoning, piece in parts:
        if reasoning:
            acc.reasoning(piece)
        else:
            acc.text(piece)
    for n, (id_, name, arguments) in enumerate(calls):
        acc.tool_call_delta(n, id=id_, name=name, arguments=arguments)
    acc.finish_reason, acc.usage, acc.model = finish, usage, model
    return acc.build()


def _same(got: ModelResponse, want: ModelResponse) -> None:
    """All but the kept blocks (provider_data), which the adapter adds."""
    kept = got.message.to_dict()
    kept.pop("provider_data", None)
    assert kept == want.message.to_dict()
    assert (got.finish_reason, got.usage, got.model) == (want.finish_reason, want.usage,
                                                         want.model)


@pytest.mark.parametrize("seed", range(300))
def test_a_plain_anthropic_reply_is_the_accumulators(seed: int) -> None:
    parts, calls = _reply(random.Random(seed))
    blocks: list[dict[str, Any]] = []
    for reasoning, piece in parts:
        blocks.append({"type": "thinking", "thinking": piece, "signature": "s"} if reasoning
                      else {"type": "text", "text": piece})
    for id_, name, arguments in calls:
        blocks.append({"type": "tool_use", "id": id_, "name": name, "input": arguments})
    usage = {"input_tokens": 3, "output_tokens": 5}
    got = get_wire_format("anthropic_messages").parse_body(
        {"content": blocks, "stop_reason": "end_turn", "usage": usage, "model": "m"})
    want = _expected(parts, calls, "end_turn", anthropic_usage(usage), "m")
    _same(got, want)
    assert bool(got.message.provider_data) == any(r for r, _ in parts)


@pytest.mark.parametrize("seed", range(300))
def test_a_plain_responses_reply_is_the_accumulators(seed: int) -> None:
    parts, calls = _reply(random.Random(seed))
    items: list[dict[str, Any]] = []
    for reasoning, piece in parts:
        items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": piece}]}
                     if reasoning else
                     {"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": piece}]})
    for id_, name, arguments in calls:
        items.append({"type": "function_call", "call_id": id_, "name": name,
                      "arguments": arguments})
    usage = {"input_tokens": 3, "output_tokens": 5}
    body = {"status": "completed", "output": items, "usage": usage, "model": "m"}
    got = get_wire_format("responses").parse_body(body)
    want = _expected([(r, p) for r, p in parts],
                     [(i, n, a or "{}") for i, n, a in calls],
                     got.finish_reason, responses_usage(usage), "m")
    _same(got, want)


@pytest.mark.parametrize(("reasoning", "text"), list(itertools.product(PIECES, PIECES)))
def test_a_plain_chat_reply_is_the_accumulators(reasoning: str, text: str) -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 5}
    body = {"choices": [{"message": {"role": "assistant", "content": text,
                                     "reasoning_content": reasoning,
                                     "tool_calls": [{"id": "", "type": "function",
                                                     "function": {"name": "lookup"}}]},
                         "finish_reason": "stop"}], "usage": usage, "model": "m"}
    got = get_wire_format("chat_completions").parse_body(body)
    want = _expected([(True, reasoning), (False, text)], [("", "lookup", "{}")],
                     got.finish_reason, chat_usage(usage), "m")
    _same(got, want)
