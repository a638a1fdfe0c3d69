"""Each provider's "the request is over the window" reply is read as an overflow, not as a
malformed request: the window it names is learned and the run goes on.

The bodies are the providers' documented or reported replies (the source is beside each); the
numbers are scaled down to a small window."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cpu_growth import cpu_growth
from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.testing import FakeModelServer, Fault, Reply

ANTHROPIC_LIMIT = (  # docs.anthropic.com, errors: invalid_request_error on a too-long request
    "input length and `max_tokens` exceed context limit: 1200 + 8192 > 4096, decrease input "
    "length or `max_tokens` and try again")
OPENAI = ("This model's maximum context length is 4096 tokens. However, your messages resulted "
          "in 5000 tokens. Please reduce the length of the messages.")
VLLM_DECODER = ("The decoder prompt (length 5000) is longer than the maximum model length of "
                "4096. Make sure that `max_model_len` is no smaller than the number of text "
                "tokens.")
LLAMACPP = "request (4476 tokens) exceeds the available context size (4096 tokens), try " \
           "increasing it"
LMSTUDIO = ("Trying to keep the first 6547 tokens when context the overflows. However, the "
            "model is loaded with context length of only 4096 tokens, which is not enough. Try "
            "to load the model with a larger context length, or provide a shorter input")
OPENROUTER = ("This endpoint's maximum context length is 4096 tokens. However, you requested "
              "about 9000 tokens (1000 of text input, 8000 in the output). Please reduce the "
              "length of either one, or use the \"middle-out\" transform to compress your "
              "prompt automatically.")


def openai_error(message: str, code: str | None = "context_length_exceeded") -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                      "code": code}}


CASES: dict[str, tuple[str, int, Any]] = {
    "anthropic": ("anthropic_messages", 400, {
        "type": "error", "error": {"type": "invalid_request_error",
                                   "message": ANTHROPIC_LIMIT}}),
    "anthropic-prompt": ("anthropic_messages", 400, {
        "type": "error", "error": {"type": "invalid_request_error",
                                   "message": "prompt is too long: 5000 tokens > 4096 maximum"}}),
    "openai": ("chat_completions", 400, openai_error(OPENAI)),
    "vllm": ("chat_completions", 400, openai_error(
        "This model's maximum context length is 4096 tokens. However, you requested 5000 "
        "tokens (1000 in the messages, 4000 in the completion). Please reduce the length of "
        "the messages or completion.", code=None)),
    "vllm-decoder": ("chat_completions", 400, openai_error(VLLM_DECODER, code=None)),
    # llama.cpp server: format_error_response(ERROR_TYPE_EXCEED_CONTEXT_SIZE)
    "llama.cpp": ("chat_completions", 400, {"error": {
        "code": 400, "message": LLAMACPP, "type": "exceed_context_size_error",
        "n_prompt_tokens": 4476, "n_ctx": 4096}}),
    "lm-studio": ("chat_completions", 400, {"error": LMSTUDIO}),
    "openrouter": ("chat_completions", 400, {"error": {"message": OPENROUTER, "code": 400}}),
    # OpenRouter passes on its upstream providers' wordings: xAI's, Google's, Poolside's
    "openrouter-xai": ("chat_completions", 400, openai_error(
        "This model's maximum prompt length is 4096 but the request contains 5000 tokens.",
        code=None)),
    "openrouter-google": ("chat_completions", 400, openai_error(
        "The input token count (5000) exceeds the maximum number of tokens allowed (4096).",
        code=None)),
    "openrouter-poolside": ("chat_completions", 400, openai_error(
        "Input length 5000 exceeds the maximum allowed input length of 4096 tokens.",
        code=None)),
    # DashScope (Qwen's hosted API), OpenAI-compatible mode: help.aliyun.com error codes
    "dashscope": ("chat_completions", 400, {"error": {
        "message": "<400> InternalError.Algo.InvalidParameter: Range of input length should be "
                   "[1, 4096]", "type": "invalid_request_error", "param": None,
        "code": "invalid_parameter_error"}}),
    # vLLM from 0.10: the reply's allowance and the input, named apart
    "vllm-total": ("chat_completions", 400, openai_error(
        "This model's maximum context length is 4096 tokens. However, you requested 8000 output "
        "tokens and your prompt contains at least 1000 input tokens, for a total of at least "
        "9000 tokens. Please reduce the length of the input prompt or the number of requested "
        "output tokens. (parameter=input_tokens, value=1000)", code=None)),
    "vllm-max-tokens": ("chat_completions", 400, openai_error(
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum "
        "context length is 4096 tokens and your request has 1000 input tokens (8000 > 4096 - "
        "1000).", code=None)),
    # Hugging Face TGI (and Together in front of it): a 422 validation error
    "tgi": ("chat_completions", 422, {
        "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
                 "Given: 1000 `inputs` tokens and 8000 `max_new_tokens`",
        "error_type": "validation"}),
    "tgi-input": ("chat_completions", 422, {
        "error": "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000",
        "error_type": "validation"}),
    # Mistral's API (and vLLM-based servers of its models)
    "mistral": ("chat_completions", 400, {
        "object": "error", "message": "Prompt contains 5000 tokens and 0 draft tokens, too large "
        "for model with 4096 maximum context length", "type": "invalid_request_error",
        "param": None, "code": None}),
}


def overflowing_agent(server: FakeModelServer, mode: str, events: list[Event]) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", api_mode=mode,
                 context_window=32_000, callbacks=[events.append],
                 retry=RetryPolicy(base_delay=0.01, jitter=0))


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_window_named_in_an_overflow_reply_is_learned_and_the_run_goes_on(
        case: str) -> None:
    mode, status, body = CASES[case]
    events: list[Event] = []
    with FakeModelServer([Fault.status(status, json.dumps(body)), Reply("fits now")]) as server:
        result = await overflowing_agent(server, mode, events).run("hello")
        resent = server.model_requests[1].body or {}
    assert (result.stop_reason, result.output) == ("completed", "fits now"), result.error
    learned = [e for e in events if e.type == "status" and e.kind == "context_window"]
    assert [e.data["window"] for e in learned] == [4096]  # type: ignore[attr-defined]
    if mode == "anthropic_messages":  # the reply's allowance now fits what the window leaves
        assert resent["max_tokens"] < 4096


UNNUMBERED: dict[str, tuple[int, Any]] = {
    # Ollama with truncate: false, at 400 or 500
    "ollama-400": (400, {"error": "the input length exceeds the context length"}),
    "ollama-500": (500, {"error": "the input length exceeds the context length"}),
    # Groq (directly or through OpenRouter): only the code names the cause
    "groq": (400, openai_error("Please reduce the length of the messages or completion.")),
    # OpenAI's Responses API
    "openai-responses": (400, {"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your "
                   "input and try again.", "type": "invalid_request_error", "param": "input",
        "code": "context_length_exceeded"}}),
    # LM Studio (newer), llama.cpp (older)
    "lm-studio-keep": (400, {"error": "The number of tokens to keep from the initial prompt is "
                                      "greater than the context length. Try to load the model "
                                      "with a larger context length, or provide a shorter input"}),
    "llama.cpp-old": (400, {"error": {"code": 400, "type": "invalid_request_error", "message":
                                      "the request exceeds the available context size, try "
                                      "increasing it"}}),
}


# replies that are not about the window, some naming a token count or a "context": a rate limit,
# a bad request about another field; none may be read as an overflow (the window is not
# learned, the request not shrunk)
NOT_OVERFLOW: dict[str, tuple[str, int, Any]] = {
    "dashscope-max-tokens": ("chat_completions", 400, {"error": {
        "message": "<400> InternalError.Algo.InvalidParameter: Range of max_tokens should be "
                   "[1, 8192]", "type": "invalid_request_error", "param": None,
        "code": "invalid_parameter_error"}}),
    "groq-tokens-per-minute": ("chat_completions", 413, {"error": {
        "message": "Request too large for model `llama-3.1-8b-instant` in organization `org_1` "
                   "service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested "
                   "9000, please reduce your message size and try again.",
        "type": "tokens", "code": "rate_limit_exceeded"}}),
    "openai-max-tokens-over-the-models": ("chat_completions", 400, {"error": {
        "message": "max_tokens is too large: 100000. This model supports at most 16384 "
                   "completion tokens, whereas you provided 100000.",
        "type": "invalid_request_error", "param": "max_tokens", "code": "invalid_value"}}),
    "anthropic-max-tokens-over-the-models": ("anthropic_messages", 400, {
        "type": "error", "error": {"type": "invalid_request_error", "message":
                                   "max_tokens: 100000 > 64000, which is the maximum allowed "
                                   "number of output tokens for claude-sonnet-4-5"}}),
    "a-tool-named-for-the-context-length": ("chat_completions", 400, {"error": {
        "message": "Invalid schema for function 'get_context_length': In context=(), 'required' "
                   "is required to be supplied and to be an array including every key in "
                   "properties.", "type": "invalid_request_error",
        "param": "tools[0].function.parameters", "code": "invalid_function_parameters"}}),
}


@pytest.mark.parametrize("case", sorted(NOT_OVERFLOW))
async def test_a_reply_about_something_else_is_not_taken_for_an_overflow(case: str) -> None:
    mode, status, body = NOT_OVERFLOW[case]
    events: list[Event] = []
    with FakeModelServer([Fault.status(status, json.dumps(body))], strict=False) as server:
        agent = overflowing_agent(server, mode, events)
        # long enough that a window guessed below it would be plausible
        result = await agent.run("word " * 3_000, raise_on_error=False)
        sent = len(server.model_requests)
    assert result.stop_reason == "error"
    assert not any(e.type == "status" and e.kind == "context_window" for e in events)
    assert sent == 1  # not sent again shrunk (nor repaired: the same bytes would follow)


@pytest.mark.parametrize("case", sorted(UNNUMBERED))
async def test_an_overflow_wording_without_a_number_is_an_overflow(case: str) -> None:
    status, body = UNNUMBERED[case]
    events: list[Event] = []
    with FakeModelServer([Fault.status(status, json.dumps(body))]) as server:
        agent = overflowing_agent(server, "chat_completions", events)
        # long enough that a window below it is plausible (the wording names none)
        result = await agent.run("word " * 3_000, raise_on_error=False)
    assert result.stop_reason == "error"
    assert "malformed" not in (result.error or "")
    assert any(e.type == "status" and e.kind == "context_window" for e in events)


async def test_a_malformed_request_is_still_read_as_malformed() -> None:
    body = openai_error("Invalid value for 'tool_choice': 'sometimes'.", code=None)
    with FakeModelServer([Fault.status(400, json.dumps(body))]) as server:
        agent = overflowing_agent(server, "chat_completions", [])
        result = await agent.run("hello", raise_on_error=False)
    assert result.stop_reason == "error" and "malformed" in (result.error or "")


async def test_a_long_run_of_digits_in_an_overflow_reply_is_read_in_linear_time() -> None:
    # an error that echoes the request (here, up to 200,000 digits of a tool's output): the
    # search for a window once took quadratic time, minutes on the event loop
    async def read(digits: int) -> None:
        body = openai_error("context length exceeded: " + "7" * digits)
        with FakeModelServer([Fault.status(400, json.dumps(body))]) as server:
            result = await overflowing_agent(server, "chat_completions", []).run(
                "hello", raise_on_error=False)
        assert result.stop_reason == "error"

    # 8,000 and 64,000 digits: the reply's first 65,536 characters are searched, the rest not
    assert await cpu_growth(read, 8_000, 64_000) < 8
    await read(200_000)
