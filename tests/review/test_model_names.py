"""Gating by the model's name as users write it (`review = "auto"`): a hosted model — a frontier
family under any of its spellings, an open-weights model served by its maker's API or too large
to be small, a name no profile knows — never has its how-to answer read as a call, nor gets the
checks for small local models; a small local model named by its file, its Ollama tag or its
repository still does, and so does a name no profile knows on a server that runs open weights
itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent, ToolResultEvent
from loopwright.review import Check, ReviewView, Verdict, send_back
from loopwright.testing import FakeModelServer, Fault, Reply, call
from loopwright.tools.base import Tool

FAST = RetryPolicy(base_delay=0.01, jitter=0)

HOSTED = [
    "openai/gpt-4.1", "gpt-4.1-2025-04-14", "gpt-4o-mini", "o3", "o4-mini", "gpt-5",
    "claude-sonnet-4-5-20250929", "anthropic/claude-3.5-sonnet",
    "us.anthropic.claude-sonnet-4-5-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0",  # Bedrock
    "meta.llama3-1-8b-instruct-v1:0",  # small, but Bedrock's: hosted
    "gemini-2.5-pro", "models/gemini-2.5-flash", "grok-4", "deepseek-chat", "deepseek-reasoner",
    "mistral-large-latest", "mistral-small-latest", "qwen-max",
    "Qwen/Qwen2.5-72B-Instruct", "meta-llama/Llama-3.3-70B-Instruct", "qwen3-coder-480b-a35b",
    "GPT-4.1", " gpt-4.1 ", "my-azure-deployment",  # upper case, spaces, a made-up deployment
]
SMALL_LOCAL = ["qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
               "./models/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf", "qwen2.5-coder:1.5b",
               "llama3.2:3b", "Qwen/Qwen2.5-Coder-7B-Instruct"]

# good how-to answers that show a call without making one
HOW_TO = [
    'Send a call like this:\n\n```json\n{"name": "read_file", "arguments": {"path": "a.ini"}}\n```',
    'Qwen writes calls like this:\n\n```\n<tool_call>\n{"name": "read_file", "arguments": '
    '{"path": "a.ini"}}\n</tool_call>\n```',
    'Qwen writes `<tool_call>{"name": "read_file", "arguments": {"path": "a.ini"}}</tool_call>`.',
    'Mistral writes `[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.ini"}}]`.',
    '{"name": "read_file", "arguments": {"path": "a.ini"}}',
]
CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ini"}}\n</tool_call>'


async def _read(**kw: Any) -> str:
    return json.dumps(kw)


READ_FILE = Tool(name="read_file", description="Read a file.", read_only=True, function=_read,
                 parameters={"type": "object", "properties": {"path": {"type": "string"}},
                             "required": ["path"]})


async def run(model: str, replies: list[Reply], *, flavor: str = "openai", stream: bool = False,
              **options: Any) -> tuple[str, int, list[Event]]:
    """The output, the number of model requests and the events of one run of `model`."""
    events: list[Event] = []
    # a local server answers its own window endpoint (else its kind is forgotten); the generic
    # "openai" one, a proxy, lists nothing that says which server it is
    window = None if flavor == "openai" else 32_768
    with FakeModelServer(replies, strict=False, flavor=flavor,  # type: ignore[arg-type]
                         context_window=window) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=stream, tools=[READ_FILE], callbacks=[events.append],
                             **options).run("How do I read a.ini with your tools?")
        return result.output, len(server.model_requests), events


@pytest.mark.parametrize("model", HOSTED)
async def test_a_hosted_models_how_to_answer_is_never_read_as_a_call(model: str) -> None:
    for answer in HOW_TO:
        output, requests, events = await run(model, [Reply(answer), Reply("Second.")])
        assert (output, requests) == (answer, 1), answer
        assert not [e for e in events if isinstance(e, ToolResultEvent | ReviewEvent)]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("model", ["gemini-2.5-pro", "us.anthropic.claude-sonnet-4-5-v1:0",
                                   "Qwen/Qwen2.5-72B-Instruct"])
async def test_the_name_decides_even_on_a_server_that_runs_open_weights(
        model: str, stream: bool) -> None:
    # a proxy on a llama.cpp-like server, 127.0.0.1: the name still says hosted (or large)
    output, requests, _ = await run(model, [Reply(HOW_TO[1]), Reply("Second.")],
                                    flavor="llamacpp", stream=stream)
    assert (output, requests) == (HOW_TO[1], 1)


@pytest.mark.parametrize("model", SMALL_LOCAL)
async def test_a_small_local_models_call_written_as_text_is_still_run(model: str) -> None:
    output, requests, events = await run(model, [Reply(CALL), Reply("It says port = 1.")])
    assert (output, requests) == ("It says port = 1.", 2)
    assert [e.name for e in events if isinstance(e, ToolResultEvent)] == ["read_file"]


@pytest.mark.parametrize(("flavor", "read"), [
    ("llamacpp", True), ("ollama", True), ("lmstudio", True), ("vllm", True),
    ("openai", False),  # a proxy or another OpenAI-compatible API: not known to be local
])
async def test_a_name_no_profile_knows_is_read_only_where_the_server_runs_it(
        flavor: str, read: bool) -> None:
    output, requests, _ = await run("my-finetune", [Reply(CALL), Reply("It says port = 1.")],
                                    flavor=flavor)
    assert (output, requests) == (("It says port = 1.", 2) if read else (CALL, 1))


class SmallModelsOnly(Check):
    """Sends back every first answer: it shows where it runs."""

    name = "small_only"
    small_models_only = True

    async def review(self, view: ReviewView) -> Verdict | None:
        return send_back("Again.", "shows where it runs") if len(view.history) < 4 else None


@pytest.mark.parametrize(("model", "small"), [*((m, False) for m in HOSTED),
                                              *((m, True) for m in SMALL_LOCAL)])
async def test_the_checks_for_small_local_models_run_for_those_names_only(
        model: str, small: bool) -> None:
    output, _, events = await run(model, [Reply("First."), Reply("Second.")],
                                  review_checks=[SmallModelsOnly()])
    assert output == ("Second." if small else "First.")
    assert [e.check for e in events if isinstance(e, ReviewEvent)] == (
        ["small_only"] if small else [])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_after_a_fallback_the_model_answering_decides(stream: bool) -> None:
    # a small local model first, gpt-4.1 once it fails: the hosted model's how-to answer was
    # read as a call and run (the first model's profile decided for the whole run)
    with FakeModelServer([Fault.status(500)] * 3, strict=False, flavor="ollama",
                         context_window=8192) as local, \
            FakeModelServer([Reply(HOW_TO[0])]) as hosted:
        result = await Agent("qwen2.5-coder:1.5b", base_url=local.base_url, api_key="k",
                             retry=FAST, stream=stream, tools=[READ_FILE], fallbacks=[
                                 {"model": "gpt-4.1", "base_url": hosted.base_url}]).run(
            "How do I read a.ini with your tools?")
    assert result.output == HOW_TO[0]
    # and the other way round: the small model's call, written as text, runs
    with FakeModelServer([Fault.status(500)] * 3, strict=False) as hosted, \
            FakeModelServer([Reply(CALL), Reply("It says port = 1.")], flavor="ollama",
                            context_window=8192) as local:
        result = await Agent("gpt-4.1", base_url=hosted.base_url, api_key="k", retry=FAST,
                             stream=stream, tools=[READ_FILE], fallbacks=[
                                 {"model": "qwen2.5-coder:1.5b", "base_url": local.base_url,
                                  "api_key": "k"}]).run("What does a.ini say?")
    assert result.output == "It says port = 1."


@pytest.mark.parametrize("model", ["gemini-2.5-pro", "us.anthropic.claude-sonnet-4-5-v1:0",
                                   "my-azure-deployment"])
async def test_a_hosted_model_still_gets_the_structural_checks_one_event_each(model: str) -> None:
    same = call("read_file", {"path": "a.ini"})
    script = [Reply(tool_calls=[same, same]), Reply(tool_calls=[same]), Reply(tool_calls=[same]),
              Reply("It says port = 1.")]
    output, requests, events = await run(model, script)
    assert (output, requests) == ("It says port = 1.", 4)
    assert [(e.check, e.verdict, e.budget_left, e.applied) for e in events
            if isinstance(e, ReviewEvent)] == [("duplicate_calls", "skip_call", 2, True),
                                               ("doom_loop", "skip_call", 2, True)]
