"""A `max_tokens` the user set that the window cannot hold beside the request is fitted to what
the window leaves, and the run says so once in a `context_window` status event — in every API
mode, whether the window was known before the first request or learned from an overflow reply.
A `max_tokens` that fits is sent as set, with no event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Fault, Reply
from loopwright.testing.scripted import RecordedRequest, ScriptItem, call

WINDOW = 4096
MODES = ("chat_completions", "responses", "anthropic_messages")
_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def overflow_reply(mode: str, used: int, asked: int, window: int) -> ScriptItem:
    """What each API answers when input plus the reply's allowance is over the window."""
    if mode == "anthropic_messages":  # docs.anthropic.com, errors
        message = (f"input length and `max_tokens` exceed context limit: {used} + {asked} > "
                   f"{window}, decrease input length or `max_tokens` and try again")
        return Fault.status(400, json.dumps({"type": "error", "error": {
            "type": "invalid_request_error", "message": message}}))
    # vLLM's wording (OpenAI's own names the same numbers)
    message = (f"This model's maximum context length is {window} tokens. However, you requested "
               f"{used + asked} tokens ({used} in the messages, {asked} in the completion). "
               "Please reduce the length of the messages or completion.")
    return Fault.status(400, json.dumps({"error": {
        "message": message, "type": "BadRequestError", "param": None, "code": 400}}))


class SmallWindowServer:
    """A server in front of a `window`-token window that rejects input + the reply's allowance
    over it (input estimated at 4 characters a token, as the fake server estimates usage)."""

    def __init__(self, mode: str, window: int = WINDOW, chars_per_token: int = 4) -> None:
        self.mode, self.window, self.chars_per_token = mode, window, chars_per_token
        self.limits: list[int | None] = []

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        body: dict[str, Any] = request.body or {}
        asked = next((body[f] for f in _LIMIT_FIELDS if f in body), None)
        self.limits.append(asked)
        used = len(json.dumps(body)) // self.chars_per_token
        if asked is not None and used + asked > self.window:
            return overflow_reply(self.mode, used, asked, self.window)
        return Reply("answered")


def agent_for(server: FakeModelServer, mode: str, events: list[Event], **options: Any) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", api_mode=mode,
                 callbacks=[events.append], retry=RetryPolicy(base_delay=0.01, jitter=0),
                 cache_dir=None, **options)


def fitted_events(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events  # type: ignore[attr-defined]
            if e.type == "status" and e.kind == "context_window" and "max_tokens" in e.data]


@pytest.mark.parametrize("mode", MODES)
async def test_a_max_tokens_over_a_known_window_is_fitted_and_said_once(mode: str) -> None:
    window, events = SmallWindowServer(mode), []
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, mode, events, context_window=WINDOW,
                                 max_tokens=WINDOW).run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    (sent,) = window.limits  # the first request was taken
    assert sent is not None and sent < WINDOW
    (fitted,) = fitted_events(events)
    assert fitted["max_tokens"] == WINDOW and fitted["sent"] == sent


@pytest.mark.parametrize("mode", MODES)
async def test_a_max_tokens_that_fits_is_sent_as_set_without_an_event(mode: str) -> None:
    window, events = SmallWindowServer(mode), []
    with FakeModelServer(handler=window) as server:
        await agent_for(server, mode, events, context_window=WINDOW,
                        max_tokens=100).run("Say hello.")
    assert window.limits == [100]
    assert fitted_events(events) == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_max_tokens_over_a_window_learned_from_the_rejection_is_fitted(mode: str) -> None:
    window, events = SmallWindowServer(mode), []
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, mode, events, context_window=200_000,
                                 max_tokens=WINDOW).run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert window.limits[0] == WINDOW and window.limits[-1] is not None
    assert window.limits[-1] < WINDOW and len(window.limits) == 2
    assert [f["max_tokens"] for f in fitted_events(events)] == [WINDOW]


@pytest.mark.parametrize("mode", MODES)
async def test_a_run_of_several_turns_says_it_once(mode: str) -> None:
    from loopwright import tool

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    events: list[Event] = []
    script = [Reply(tool_calls=[call("ping")]), Reply(tool_calls=[call("ping")]), Reply("done")]
    with FakeModelServer(script) as server:
        result = await agent_for(server, mode, events, context_window=WINDOW, max_tokens=WINDOW,
                                 tools=[ping]).run("Ping twice.")
        limits = [next(r.body[f] for f in _LIMIT_FIELDS if f in r.body)
                  for r in server.model_requests]
    assert result.output == "done"
    assert len(limits) == 3 and all(limit < WINDOW for limit in limits)
    assert len(fitted_events(events)) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_an_allowance_the_provider_counts_over_the_window_is_fitted_to_its_count(
        mode: str) -> None:
    # a dense tokenizer (a character a token, as for Chinese text): the estimate said the reply's
    # allowance fits; the provider counts the input, names both numbers and the window, and the
    # allowance is fitted to what its count leaves, without shrinking the request
    window, events = SmallWindowServer(mode, chars_per_token=1), []
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, mode, events, context_window=WINDOW,
                                 max_tokens=1_500).run("Say hello. " + "x" * 2_000)
        sent = [len(json.dumps(r.body)) for r in server.model_requests]
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert window.limits[0] == 1_500 and len(window.limits) == 2
    assert window.limits[1] == WINDOW - sent[1]  # exactly what the provider's count leaves
    assert [f["max_tokens"] for f in fitted_events(events)] == [1_500]


@pytest.mark.parametrize("mode", MODES)
async def test_an_input_over_the_window_by_itself_is_not_sent_again_with_a_smaller_allowance(
        mode: str) -> None:
    window, events = SmallWindowServer(mode, chars_per_token=1), []
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, mode, events, context_window=WINDOW,
                                 max_tokens=1_500).run("Say hello. " + "x" * 3_950,
                                                       raise_on_error=False)
    assert result.stop_reason == "error"
    assert fitted_events(events) == []


# each provider's reply naming the input (1000) and the allowance (3500) over a 4096 window
ALLOWANCE_REPLIES: dict[str, tuple[str, int, Any]] = {
    "anthropic": ("anthropic_messages", 400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "input length and `max_tokens` exceed "
        "context limit: 1000 + 3500 > 4096, decrease input length or `max_tokens` and try "
        "again"}}),
    "openai": ("chat_completions", 400, {"error": {"message": "This model's maximum context "
               "length is 4096 tokens. However, you requested 4500 tokens (1000 in the "
               "messages, 3500 in the completion). Please reduce the length of the messages or "
               "completion.", "type": "invalid_request_error", "param": "messages",
               "code": "context_length_exceeded"}}),
    "vllm": ("responses", 400, {"error": {"message": "This model's maximum context length is "
             "4096 tokens. However, you requested 3500 output tokens and your prompt contains "
             "at least 1000 input tokens, for a total of at least 4500 tokens. Please reduce "
             "the length of the input prompt or the number of requested output tokens. "
             "(parameter=input_tokens, value=1000)", "type": "BadRequestError", "code": 400}}),
    "vllm-max-tokens": ("chat_completions", 400, {"error": {"message": "'max_tokens' or "
                        "'max_completion_tokens' is too large: 3500. This model's maximum "
                        "context length is 4096 tokens and your request has 1000 input tokens "
                        "(3500 > 4096 - 1000).", "type": "BadRequestError", "code": 400}}),
    "openrouter": ("chat_completions", 400, {"error": {"message": "This endpoint's maximum "
                   "context length is 4096 tokens. However, you requested about 4500 tokens "
                   "(600 of text input, 400 of tool input, 3500 in the output). Please reduce "
                   "the length of either one.", "code": 400}}),
    "tgi": ("chat_completions", 422, {"error": "Input validation error: `inputs` tokens + "
            "`max_new_tokens` must be <= 4096. Given: 1000 `inputs` tokens and 3500 "
            "`max_new_tokens`", "error_type": "validation"}),
}


@pytest.mark.parametrize("case", sorted(ALLOWANCE_REPLIES))
async def test_each_providers_count_of_the_input_fits_the_allowance(case: str) -> None:
    mode, status, body = ALLOWANCE_REPLIES[case]
    events: list[Event] = []
    script = [Fault.status(status, json.dumps(body)), Reply("answered")]
    with FakeModelServer(script) as server:
        result = await agent_for(server, mode, events, context_window=WINDOW,
                                 max_tokens=3_500).run("Say hello.")
        limits = [next(r.body[f] for f in _LIMIT_FIELDS if f in r.body)
                  for r in server.model_requests]
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    assert limits == [3_500, WINDOW - 1_000]
    assert [f["sent"] for f in fitted_events(events)] == [WINDOW - 1_000]


@pytest.mark.parametrize("mode", MODES)
async def test_a_max_tokens_a_plugin_sets_on_one_call_is_fitted_too(mode: str) -> None:
    from loopwright.plugins import LoopPlugin

    class LongReplies(LoopPlugin):
        async def before_model(self, run: Any, request: Any) -> None:
            request.max_tokens = WINDOW

    window, events = SmallWindowServer(mode), []
    with FakeModelServer(handler=window) as server:
        result = await agent_for(server, mode, events, context_window=WINDOW,
                                 plugins=[LongReplies()]).run("Say hello.")
    assert (result.stop_reason, result.output) == ("completed", "answered"), result.error
    (sent,) = window.limits
    assert sent is not None and sent < WINDOW
    assert [f["max_tokens"] for f in fitted_events(events)] == [WINDOW]
