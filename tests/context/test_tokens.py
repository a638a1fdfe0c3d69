"""Token accounting (context/tokens.py): a cheap estimate corrected by reported usage."""

from __future__ import annotations

from dataclasses import replace

from loopwright.context.compaction import stub_for
from loopwright.context.tokens import (
    TokenCounter,
    estimate_message,
    estimate_request,
    estimate_text,
)
from loopwright.messages import Message, ModelRequest, ToolCall, tool_result, user, with_user_note


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


def _from_scratch(messages: list[Message]) -> int:
    """The estimate of copies of `messages` (nothing memoised on them)."""
    copies = [replace(m, tool_calls=list(m.tool_calls)) for m in messages]
    return estimate_request(ModelRequest(model="m", messages=copies))


def test_a_long_historys_running_estimate_equals_the_from_scratch_one_at_every_step() -> None:
    counter = TokenCounter()
    history = [Message(role="system", content="rules " * 50), user("the task " * 20)]

    def check() -> None:
        request = ModelRequest(model="m", messages=list(history))
        assert counter.estimate(request) == _from_scratch(history)

    for n in range(150):  # appends, turn after turn (reasoning on some replies)
        made = ToolCall(id=f"c{n}", name="read", arguments=f'{{"part": {n}}}')
        history.append(Message(role="assistant", content="", reasoning="why " * (n % 3),
                               tool_calls=[made]))
        history.append(tool_result(made, "漢字 and text " * (n % 7)))
        check()
    history[40].content = "edited by a plugin " * 30  # in place, after its estimate was kept
    check()
    history[:] = [stub_for(m) if m.role == "tool" and i < 200 else m  # pruning's replacement
                  for i, m in enumerate(history)]
    check()
    history[2:250] = [user("## Summary\n" + "done " * 100)]  # compaction: a shorter history
    check()
    history.append(user("a new request"))
    check()
    with_note = with_user_note(history, "<system-reminder>note</system-reminder>")
    request = ModelRequest(model="m", messages=with_note)  # a reminder's new last message
    assert counter.estimate(request) == _from_scratch(with_note)
    check()  # and back to the history without it
