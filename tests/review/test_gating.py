"""Review gating (`review = "auto"`): every model gets the structural checks only, whatever the
endpoint's address; the checks that read prose are opt-in (`review = "all"` or named), and
when opted in they leave good answers alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, notes, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.review import Check, ReviewView, Verdict, send_back
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.base import Tool

FAST = RetryPolicy(base_delay=0.01, jitter=0)
CORPUS = json.loads((Path(__file__).parent / "good_answers.json").read_text(encoding="utf-8"))
# hosted frontier models, served here by the fake server on 127.0.0.1 as a proxy would be
FRONTIER = [("claude-sonnet-4-5", "anthropic_messages"), ("gpt-4.1", "chat_completions")]


def echo_tool(name: str, params: tuple[str, ...]) -> Tool:
    """A tool `name` taking string `params` (an `add` takes two numbers) that returns its input."""
    async def run(**kw: Any) -> str:
        return json.dumps(kw)
    schema = {"type": "object", "properties": {p: {"type": "number" if name == "add" else
                                                    "string"} for p in params},
              "required": list(params), "additionalProperties": False}
    return Tool(name=name, description=f"The {name} tool.", parameters=schema, function=run,
                read_only=True)


TOOLS = [echo_tool(n, p) for n, p in [
    ("read_file", ("path",)), ("get_weather", ("city",)), ("get_stock", ("item",)),
    ("add", ("a", "b")), ("bash", ("command",)), ("web_fetch", ("url",)), ("lookup", ("email",)),
    ("sales_on", ("date",))]]


def test_the_corpus_holds_at_least_100_answers_of_every_shape() -> None:
    shapes = {item["shape"] for item in CORPUS["answers"]}
    assert len(CORPUS["answers"]) >= 100
    assert {"recorded", "colon before a code block", "begins 'I need to…' / 'Let me…'",
            "names files", "a JSON object", "equals an argument value",
            "not in English"} <= shapes


@pytest.mark.parametrize(("model", "mode"), FRONTIER)
async def test_no_good_answer_of_a_frontier_model_is_sent_back_or_set_aside(
        model: str, mode: str, tmp_path: Path) -> None:
    answers = CORPUS["answers"]
    script: list[Reply] = []
    for item in answers:
        first = item.get("call") or {"name": "read_file", "arguments": {"path": "data.txt"}}
        script += [Reply(tool_calls=[call(first["name"], first["arguments"])]),
                   Reply(item["answer"])]
    events: list[Event] = []
    with FakeModelServer(script) as server:
        agent = Agent(model, base_url=server.base_url, api_key="k", api_mode=mode, stream=False,
                      retry=FAST, tools=TOOLS, callbacks=[events.append], workdir=str(tmp_path))
        outputs = [(await agent.run("Answer the question about config.ini.")).output
                   for _ in answers]
    assert not [e for e in events if isinstance(e, ReviewEvent)]
    assert outputs == [item["answer"] for item in answers]  # none replaced, none held back
    assert len(server.model_requests) == 2 * len(answers)  # no extra call


async def test_no_good_answer_of_a_small_model_is_sent_back_either(tmp_path: Path) -> None:
    # the prose-reading checks opted in for a small model: they must leave good answers alone
    # too, "I need to…", "Let me…", a how-to naming a tool, other languages included
    answers = [item for item in CORPUS["answers"] if not item.get("small_models_read_a_call")]
    script: list[Reply] = []
    for item in answers:
        first = item.get("call") or {"name": "read_file", "arguments": {"path": "data.txt"}}
        script += [Reply(tool_calls=[call(first["name"], first["arguments"])]),
                   Reply(item["answer"])]
    events: list[Event] = []
    with FakeModelServer(script) as server:
        agent = Agent("qwen2.5-coder-1.5b", base_url=server.base_url, api_key="k", stream=False,
                      retry=FAST, tools=TOOLS, callbacks=[events.append], workdir=str(tmp_path),
                      review="all")
        outputs = [(await agent.run("Answer the question about config.ini.")).output
                   for _ in answers]
    assert not [e for e in events if isinstance(e, ReviewEvent)]
    assert outputs == [item["answer"] for item in answers]


# --- the hosted-model false positives of the issue, replayed --------------------------------
async def shown_as_is(model: str, answer: str, prompt: str, **options: Any) -> bool:
    """Whether `answer`, scripted as `model`'s one reply, is the run's output with no extra
    request (nothing sent back, nothing set aside)."""
    with FakeModelServer([Reply(answer)]) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=TOOLS, **options).run(prompt)
    return result.output == answer and len(server.model_requests) == 1



async def test_a_frontier_answer_that_ends_with_a_how_to_call_is_not_sent_back() -> None:
    # claude-sonnet-4-5 on the fake server: a how-to answer with a fenced JSON call example was
    # read as a call and run, and the text left ("…like this:") was sent back as a dangling colon
    answer = ("To read it yourself, send a call like this:\n\n```json\n"
              '{"name": "read_file", "arguments": {"path": "config.ini"}}\n```')
    assert await shown_as_is("claude-sonnet-4-5", answer,
                             "How do I read config.ini with your tools?",
                             api_mode="anthropic_messages")


async def test_a_frontier_answer_about_a_named_file_it_did_not_read_is_shown() -> None:
    # claude-sonnet-4-5: the user pasted nothing, the answer is general advice about the file;
    # it was set aside by the unread-file check and never shown
    answer = "config.ini is usually read at start-up; restart the service after you change it."
    assert await shown_as_is("claude-sonnet-4-5", answer,
                             "When does my app read config.ini? Read it.",
                             api_mode="anthropic_messages")


async def test_a_frontier_answer_that_begins_let_me_and_ends_with_a_plan_is_shown() -> None:
    answer = ("Let me explain what happens. The loader reads settings in order, and the last "
              "one wins. Next, I'll check the environment variables.")
    assert await shown_as_is("gpt-4.1", answer, "Explain the loader.")


async def test_a_frontier_model_still_gets_the_structural_checks() -> None:
    events: list[Event] = []
    twice = [call("read_file", {"path": "a.txt"}), call("read_file", {"path": "a.txt"})]
    with FakeModelServer([Reply(tool_calls=twice), Reply("Done.")]) as server:
        await Agent("claude-sonnet-4-5", base_url=server.base_url, api_key="k",
                    api_mode="anthropic_messages", retry=FAST, stream=False, tools=TOOLS,
                    callbacks=[events.append]).run("Read a.txt")
    assert [e.check for e in events if isinstance(e, ReviewEvent)] == ["duplicate_calls"]


async def test_review_all_gives_a_frontier_model_every_check() -> None:
    with FakeModelServer([Reply("I'll read the file now."), Reply("It says hi.")]) as server:
        result = await Agent("claude-sonnet-4-5", base_url=server.base_url, api_key="k",
                             api_mode="anthropic_messages", retry=FAST, stream=False,
                             tools=TOOLS, review="all").run("What does a.txt say?")
    assert result.output == "It says hi."


# --- small models: the reported false positives ---------------------------------------------


@tool(read_only=True)
def read_inventory(path: str) -> str:
    """Read an inventory file."""
    return "item,count\nblue widgets,12\nred widgets,3\n"


async def test_an_answer_that_begins_i_need_to_look_at_is_not_a_narration() -> None:
    # Qwen2.5-Coder-1.5B, held-out task: a right answer sent back by the narration nudge
    answer = ("I need to look at the inventory file to find the cost of the blue widgets. The "
              "cost of the blue widgets is not provided in the inventory file, so I cannot "
              "determine it.")
    script = [Reply(tool_calls=[call("read_inventory", {"path": "inventory.csv"})]),
              Reply(answer)]
    with FakeModelServer(script) as server:
        result = await Agent("qwen2.5-coder-1.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=False, tools=[read_inventory]).run(
            "How much do the blue widgets in inventory.csv cost?")
    assert result.output == answer and len(server.model_requests) == 2


async def test_a_json_answer_equal_to_a_refused_calls_arguments_is_the_answer() -> None:
    # a correct `{"response": "1.0842"}` was set aside as a copy of a call's arguments: the
    # model had first sent it to a tool that does not exist (after_error, which sends any
    # answer after a failed call back once, is left out: the copy check is what is replayed)
    script = [Reply(tool_calls=[call("respond", {"response": "1.0842"})]),
              Reply('{"response": "1.0842"}')]
    with FakeModelServer(script) as server:
        result = await Agent("qwen2.5-coder-1.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=False, tools=[read_inventory],
                             review=["auto", "copied_preamble"], review_off=["after_error"]).run(
            'What is 1 EUR in USD at 1.0842? Answer as {"response": "<value>"}.')
    assert result.output == '{"response": "1.0842"}' and len(server.model_requests) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("answer", [
    "Wrap each result in `<tool_response>` tags, for example `<tool_response>42</tool_response>`.",
    "The prompt format shows results like this:\n\n```xml\n<tool_response name=\"add\">\n5\n"
    "</tool_response>\n```",
    # a fence of tildes is code too (CommonMark): the block was cut from the answer
    "The prompt format shows results like this:\n\n~~~xml\n<tool_response name=\"add\">\n5\n"
    "</tool_response>\n~~~",
])
async def test_runtime_markup_written_as_code_is_text_even_for_a_small_model(
        answer: str, stream: bool) -> None:
    events: list[Event] = []
    with FakeModelServer([Reply(answer)]) as server:
        result = await Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=stream, tools=TOOLS,
                             callbacks=[events.append]).run("How are tool results shown?")
    assert result.output == answer and len(server.model_requests) == 1
    if stream:
        assert "".join(e.text for e in events if e.type == "text_delta") == answer


# --- small models under "auto": the prose checks are opt-in ---------------------------------
# a reply of a small local model that each prose check sends back or sets aside when named, and
# the calls before it: under "auto" (the default) it is the answer, with no extra request
PORT_GUESS = "The port number set in config.ini is 8080."
PREAMBLE = "I will look up how many apples are in stock with the inventory tool now."
PROSE_REPLIES: dict[str, tuple[list[Reply], str]] = {
    "unread_file": ([], PORT_GUESS),
    "imitated_markup": ([], '<tool_response>\n{"city": "Oslo", "weather": "sunny"}\n'
                            "</tool_response>"),
    "echoed_note": ([], notes.text(notes.LAST_ROUND)),
    "copied_preamble": ([Reply(PREAMBLE, tool_calls=[call("get_stock", {"item": "apples"})])],
                        PREAMBLE),
    "dangling_colon": ([], "The result of this call would be:"),
    "narration": ([], "Let me read config.ini now."),
}


async def run_small(check: str, review: Any, tmp_path: Path) -> tuple[str, list[str], int]:
    """The output, the checks that gave a verdict and the number of requests of a run of the
    0.5B whose last reply is `PROSE_REPLIES[check]`, then (if sent back) "Fine."."""
    (tmp_path / "config.ini").write_text("port = 8417\n")
    before, reply = PROSE_REPLIES[check]
    events: list[Event] = []
    with FakeModelServer([*before, Reply(reply), Reply("Fine.")], strict=False) as server:
        result = await Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                             retry=FAST, stream=False, tools=TOOLS, workdir=str(tmp_path),
                             callbacks=[events.append], review=review).run(
            "What port number is set in config.ini?")
        requests = len(server.model_requests)
    return (result.output, [e.check for e in events if isinstance(e, ReviewEvent)], requests)


@pytest.mark.parametrize("check", PROSE_REPLIES)
async def test_under_auto_a_small_model_reply_a_prose_check_would_send_back_is_the_answer(
        check: str, tmp_path: Path) -> None:
    output, checks, requests = await run_small(check, "auto", tmp_path)
    assert output == PROSE_REPLIES[check][1] and checks == []
    assert requests == len(PROSE_REPLIES[check][0]) + 1


@pytest.mark.parametrize("check", PROSE_REPLIES)
async def test_a_prose_check_named_on_top_of_auto_fires_on_the_same_reply(
        check: str, tmp_path: Path) -> None:
    output, checks, _ = await run_small(check, ["auto", check], tmp_path)
    assert checks == [check] and output == "Fine."


# --- a structural check for small models only (`Check.small_models_only`) --------------------
class SmallModelsOnly(Check):
    """Sends back every first answer: it shows where it runs."""

    name = "small_only"
    small_models_only = True

    async def review(self, view: ReviewView) -> Verdict | None:
        return send_back("Again.", "shows where it runs") if len(view.history) < 4 else None


@pytest.mark.parametrize(("model", "runs"), [
    ("qwen2.5-coder-0.5b", True), ("llama-3.2-3b-instruct", True),  # small local families
    ("gpt-4.1", False), ("claude-sonnet-4-5", False),  # frontier, even on 127.0.0.1
    ("my-finetune", False),  # an unknown name: not known to be small
])
async def test_under_auto_a_small_models_only_check_runs_for_a_small_local_profile_only(
        model: str, runs: bool) -> None:
    events: list[Event] = []
    with FakeModelServer([Reply("First."), Reply("Second.")], strict=False) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, review_checks=[SmallModelsOnly()],
                             callbacks=[events.append]).run("Say something.")
    assert result.output == ("Second." if runs else "First.")
    assert [e.check for e in events if isinstance(e, ReviewEvent)] == (
        ["small_only"] if runs else [])
