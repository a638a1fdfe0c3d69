"""Token accounting (context/tokens.py): a cheap estimate corrected by reported usage."""

from __future__ import annotations

from loopwright.context.tokens import TokenCounter, estimate_message, estimate_text
from loopwright.messages import Message, ModelRequest, ToolCall


def test_ascii_is_about_four_characters_a_token_and_cjk_about_one() -> None:
    assert estimate_text("a" * 400) == 100
    assert estimate_text("") == 0
    assert 90 <= estimate_text("漢" * 100) <= 110
    assert estimate_text("😀" * 10) >= 10


def test_a_message_counts_content_reasoning_and_call_arguments_once() -> None:
    message = Message(role="assistant", content="x" * 40, reasoning="y" * 40,
                      tool_calls=[ToolCall(id="c", name="read", arguments='{"path": "a"}')])
    first = estimate_message(message)
    assert first > 20
    assert estimate_message(message) == first  # memoised on the message


def test_the_counter_learns_the_providers_ratio_from_reported_usage() -> None:
    request = ModelRequest(model="m", messages=[Message(role="user", content="w" * 4_000)])
    counter = TokenCounter()
    raw = counter.count(request)
    counter.sent(request)
    counter.reported(raw * 2)
    assert counter.count(request) == raw * 2
    counter.sent(request)
    counter.reported(raw)  # later samples are averaged in, not swapped in
    assert raw < counter.count(request) < raw * 2


def test_odd_reports_are_clamped_and_tiny_requests_ignored() -> None:
    big = ModelRequest(model="m", messages=[Message(role="user", content="w" * 4_000)])
    counter = TokenCounter()
    counter.sent(big)
    counter.reported(10**9)
    assert counter.ratio == TokenCounter.MAX_RATIO
    tiny = TokenCounter()
    tiny.sent(ModelRequest(model="m", messages=[Message(role="user", content="hi")]))
    tiny.reported(500)
    assert tiny.ratio == 1.0
