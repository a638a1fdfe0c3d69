"""The call a failed call's error points to (issue 12), replayed through the fake model server
with the replies Qwen2.5-Coder-0.5B served by llama.cpp wrote for the bench task `stock_single`
in prompt mode: told "no such item: apple; known items: apples, pears, plums", it sent
`get_stock("apple")` again, with a runaway list of fruit after it, until the loop guard stopped
the run — in every prompt-mode run."""

from __future__ import annotations

import json

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.messages import ToolCall
from loopwright.testing import FakeModelServer, Reply
from loopwright.tools.corrections import corrected_call

STOCK = {"apples": 42, "pears": 17, "plums": 5}
FIXED = '{"name": "get_stock", "arguments": {"item": "apples"}}'


def block(name: str, arguments: dict[str, str]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def make_agent(server: FakeModelServer, asked: list[str], fmt: str) -> Agent:
    @tool(read_only=True)
    def get_stock(item: str) -> int:
        """How many of an item are in stock."""
        asked.append(item)
        if item not in STOCK:
            raise KeyError(f"no such item: {item}; known items: {', '.join(STOCK)}")
        return STOCK[item]

    return Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                 retry=RetryPolicy(base_delay=0.01, jitter=0), tools=[get_stock],
                 tool_call_format=fmt)


@pytest.mark.parametrize("fmt", ["native", "prompt"])
async def test_a_failed_call_sent_again_is_shown_the_call_its_error_points_to(fmt: str) -> None:
    fruit = ["apple", "pears", "plums", "banana", "cherry", "date", "elderberry", "fig", "grape"]
    runaway = "\n".join(block("get_stock", {"item": f}) for f in fruit)
    script = [Reply(block("get_stock", {"item": "apple"})), Reply(runaway),
              Reply(f"<tool_call>\n{FIXED}\n</tool_call>"), Reply("42 apples are in stock.")]
    asked: list[str] = []
    with FakeModelServer(script) as server:
        result = await make_agent(server, asked, fmt).run("How many apples are in stock?")
    assert result.output == "42 apples are in stock."
    assert asked == ["apple", "apples"]  # the runaway list never ran
    told = next(m.content for m in result.messages
                if m.role == "tool" and "this exact call failed" in m.content)
    assert f"change the arguments as the error says, for example {FIXED}, or answer" in told


@pytest.mark.parametrize(("arguments", "error", "expected"), [
    ({"item": "apple"}, "no such item: apple; known items: apples, pears, plums",
     {"item": "apples"}),
    ({"city": "paris"}, "unknown city 'paris'; try one of: Paris, Lyon", {"city": "Paris"}),
    # the value itself is no correction, nor is a word two values are near
    ({"path": "confg.ini"}, "[Errno 2] No such file or directory: '/tmp/p/confg.ini'", None),
    ({"item": "pear"}, "no such item: pear; known items: pears, peart", None),
    ({"user_id": 123}, "no user with id 123", None),
])
def test_the_corrected_call_takes_the_one_near_word_of_the_error(
        arguments: dict[str, object], error: str, expected: dict[str, object] | None) -> None:
    found = corrected_call(ToolCall(id="c", name="t", arguments=json.dumps(arguments)), error)
    assert (json.loads(found)["arguments"] if found else None) == expected
