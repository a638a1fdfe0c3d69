"""Progress is never cut: a forced answer without tools never ends a run that is making new
calls with new arguments and new results (issue 28)."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
CHAIN = ["start.txt", "b.txt", "c.txt", "d.txt", "e.txt", "end.txt"]
read: list[str] = []


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file."""
    read.append(path)
    if path == CHAIN[-1]:
        return "value = 7"
    return f"next: {CHAIN[CHAIN.index(path) + 1]}" if path in CHAIN else "no such file"


@pytest.fixture(autouse=True)
def fresh_read() -> None:
    read.clear()


def tools_off(request: RecordedRequest) -> bool:
    return (request.body or {}).get("tool_choice") == "none"


def reads(*paths: str) -> list[Any]:
    return [call("read_file", {"path": p}) for p in paths]


async def run_chain(script: list[Reply], model: str = "qwen2.5-coder-0.5b",
                    **options: Any) -> tuple[Any, Any]:
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[read_file], max_turns=12, **options).run(
            "Start at start.txt and follow each 'next:' to the end. What is the value?")
    return result, server


async def test_a_chain_of_six_reads_each_after_a_replayed_call_completes() -> None:
    # the reported early stop: after a new step that followed a replayed call, the next request
    # went without tools, and the model's correct next read stopped the run at step 2
    script = [Reply(tool_calls=reads(CHAIN[0]))]
    script += [Reply(tool_calls=reads(CHAIN[i - 1], CHAIN[i])) for i in range(1, len(CHAIN))]
    script.append(Reply("The value is 7."))
    result, server = await run_chain(script)
    assert result.stop_reason == "completed", result.error
    assert result.output == "The value is 7."
    assert read == CHAIN  # each replayed call was given its known result, not run again
    assert not any(tools_off(r) for r in server.model_requests)


async def test_a_chain_of_six_plain_reads_completes() -> None:
    script = [Reply(tool_calls=reads(path)) for path in CHAIN] + [Reply("The value is 7.")]
    result, _ = await run_chain(script)
    assert (result.stop_reason, result.output, read) == ("completed", "The value is 7.", CHAIN)


async def test_a_chain_of_six_reads_in_prompt_mode_completes_and_is_shown_as_trained() -> None:
    # the real 1.5B in prompt mode (bench/chain_reads.py, docs/benchmarks.md): told "never write
    # <tool_response> yourself" it wrote a made-up <tool_response> and no call; shown results as
    # `<tool_response name="read_file">` it answered the first file's line number. Results now
    # come back as the Hermes/Qwen templates write them, and the section does not name the tag
    script = [Reply(f'<tool_call>\n{{"name": "read_file", "arguments": {{"path": "{path}"}}}}'
                    "\n</tool_call>") for path in CHAIN] + [Reply("The value is 7.")]
    result, server = await run_chain(script, tool_call_format="prompt")
    assert (result.stop_reason, result.output, read) == ("completed", "The value is 7.", CHAIN)
    system = str(server.model_requests[0].body["messages"][0]["content"])
    assert "<tool_call>" in system and "tool_response" not in system
    last = server.model_requests[-1].body["messages"][-1]["content"]
    assert last == "<tool_response>\nvalue = 7\n</tool_response>"


async def test_a_new_call_where_an_answer_was_asked_for_runs() -> None:
    # a runaway (the same read copied in one reply) gets an answer-only request; the model's
    # next read there is a call never made before: progress, so it runs
    script = [Reply(tool_calls=reads(CHAIN[0])),
              Reply(tool_calls=reads(CHAIN[0], CHAIN[0])),
              Reply(tool_calls=reads(CHAIN[1])),
              Reply("b.txt says next: c.txt.")]
    result, server = await run_chain(script)
    assert tools_off(server.model_requests[2])
    assert result.stop_reason == "completed" and read == CHAIN[:2]


ANSWER_AGAIN = ["auto", "answer_again"]  # opt-in
RUNAWAY = [Reply(tool_calls=reads(CHAIN[0])), Reply(tool_calls=reads(CHAIN[0], CHAIN[0])),
           Reply(tool_calls=reads(CHAIN[0]))]  # the last one where an answer was asked for


@pytest.mark.parametrize("review", ["auto", ANSWER_AGAIN])
async def test_the_same_call_where_an_answer_was_asked_for_stops(review: Any) -> None:
    # at once under auto; asked once more with answer_again, then stopped
    script = [*RUNAWAY, Reply(tool_calls=reads(CHAIN[0]))] if review != "auto" else RUNAWAY
    result, server = await run_chain(script, review=review)
    assert result.stop_reason == "loop_detected" and read == CHAIN[:1]
    assert [tools_off(r) for r in server.model_requests] == [False, False, *[True] * (
        len(script) - 2)]


async def test_a_model_that_calls_where_an_answer_was_asked_for_is_asked_once_more() -> None:
    # Qwen2.5-Coder-0.5B on the dev2 split, told to answer, wrote the same run_tests call again
    # with the counts in hand, and the run stopped without an answer: it is given the result
    # and the request, and asked once more
    result, server = await run_chain([*RUNAWAY, Reply("start.txt says next: b.txt.")],
                                     review=ANSWER_AGAIN)
    assert (result.stop_reason, result.output) == ("completed", "start.txt says next: b.txt.")
    assert read == CHAIN[:1] and tools_off(server.model_requests[3])
    asked = str(server.model_requests[3].body["messages"][-1]["content"])
    assert "next: b.txt" in asked and "follow each 'next:'" in asked
    assert asked != server.model_requests[2].body["messages"][-1]["content"]


async def test_with_the_review_budget_spent_it_stops_at_once() -> None:
    result, server = await run_chain(RUNAWAY, review=ANSWER_AGAIN, review_budget=0)
    assert result.stop_reason == "loop_detected" and len(server.model_requests) == 3


async def test_a_new_call_where_an_answer_was_asked_for_still_runs_with_it_on() -> None:
    script = [Reply(tool_calls=reads(CHAIN[0])), Reply(tool_calls=reads(CHAIN[0], CHAIN[0])),
              Reply(tool_calls=reads(CHAIN[1])), Reply("b.txt says next: c.txt.")]
    result, _ = await run_chain(script, review=ANSWER_AGAIN)
    assert result.stop_reason == "completed" and read == CHAIN[:2]


async def test_a_call_left_out_of_one_reply_is_not_a_replay_when_it_comes_back() -> None:
    """The guard forgets the result of a call a reply did not make: `start.txt`, then
    `b.txt`, then `start.txt` with `c.txt` is two new steps (both run), not a replay of the
    first reply whose second call is skipped. Fails if a result outlives its streak."""
    script = [Reply(tool_calls=reads("start.txt")), Reply(tool_calls=reads("b.txt")),
              Reply(tool_calls=reads("start.txt", "c.txt")), Reply("done")]
    result, server = await run_chain(script)
    assert result.stop_reason == "completed", result.error
    # read-only calls of one reply run side by side, so their order within the reply is free
    assert read[:2] == ["start.txt", "b.txt"] and sorted(read[2:]) == ["c.txt", "start.txt"]
    assert not any(tools_off(r) for r in server.model_requests)


async def test_a_reply_that_opens_with_the_last_replys_call_is_still_a_replay() -> None:
    """Where the rule must fire: the same reply shape right after the call it opens with."""
    script = [Reply(tool_calls=reads("start.txt")),
              Reply(tool_calls=reads("start.txt", "start.txt", "b.txt", "c.txt")),
              Reply("done")]
    result, _ = await run_chain(script)
    assert result.stop_reason == "completed", result.error
    # the copies given their known result, the next step run, the rest of the replay not
    assert read == ["start.txt", "b.txt"]


# --- a repeat counts only with the same result --------------------------------------------------

polls: list[int] = []


@tool(read_only=True)
def job_status(job: str) -> str:
    """The status of a job."""
    polls.append(len(polls))
    return f"{job}: running, {10 * len(polls)}% done"


@tool(read_only=True)
def job_status_stuck(job: str) -> str:
    """The status of a job that never moves."""
    polls.append(len(polls))
    return f"{job}: running, 10% done"


async def poll(model: str, status: Any, times: int) -> tuple[Any, Any]:
    polls.clear()
    name = status.name
    script = [Reply(tool_calls=[call(name, {"job": "build"})]) for _ in range(times)]
    script.append(Reply("The build is done."))
    with FakeModelServer(script, strict=False) as server:
        result = await Agent(model, base_url=server.base_url, api_key="k", retry=FAST,
                             stream=False, tools=[status], max_turns=12).run(
            "Wait for the build job to finish.")
    return result, server


@pytest.mark.parametrize("model", ["gpt-4.1", "qwen2.5-coder-0.5b"])
async def test_polling_a_job_whose_status_changes_is_never_a_loop(model: str) -> None:
    # the reported stop: three identical `job_status` calls with different results ended a
    # frontier model's run with loop_detected
    result, server = await poll(model, job_status, 5)
    assert result.stop_reason == "completed", result.error
    assert result.output == "The build is done."
    assert len(polls) == 5  # every poll ran
    assert not any(tools_off(r) for r in server.model_requests)


@pytest.mark.parametrize("model", ["gpt-4.1", "qwen2.5-coder-0.5b"])
async def test_the_same_call_with_the_same_result_is_still_a_loop(model: str) -> None:
    result, server = await poll(model, job_status_stuck, 5)
    assert len(polls) == 2  # the third identical call was intercepted, with guidance
    warned = server.model_requests[3].body["messages"][-1]["content"]
    assert "job_status_stuck" in warned and "10% done" in warned
    assert tools_off(server.model_requests[4])  # then an answer without tools was asked for
    assert result.stop_reason == "loop_detected"  # and calling there stopped the run
