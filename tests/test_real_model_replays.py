"""Failures seen only with real small models (issue 12), replayed through the fake model server.

Each test sends what Qwen2.5-Coder-0.5B served by llama.cpp sent (or what llama.cpp answered),
in every API mode where the behaviour touches the wire, streamed and not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, notes, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply, ScriptedUsage, call
from loopwright.tools.base import Tool

ANSWER_NOW_NOTE = notes.text(notes.ANSWER_NOW)

FAST = RetryPolicy(base_delay=0.01, jitter=0)
MODES = ["chat_completions", "anthropic_messages", "responses"]
# llama.cpp's answer to a history holding `{"a":` as a call's arguments, byte for byte
LLAMACPP_500 = {"error": {"code": 500, "message": (
    "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at "
    "line 1, column 6: syntax error while parsing value - unexpected end of input; expected '[', "
    "'{', or a literal; last read: ''"), "type": "server_error"}}


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=[True, False], ids=["stream", "plain"])
def stream(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


ran: list[tuple[int, int]] = []


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def fresh_ran() -> None:
    ran.clear()


def make_agent(server: FakeModelServer, mode: str = "chat_completions", stream: bool = False,
               events: list[Event] | None = None, **kw: Any) -> Agent:
    kw.setdefault("tools", [add])
    return Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k", api_mode=mode,
                 stream=stream, retry=FAST,
                 callbacks=[events.append] if events is not None else [], **kw)


def sent_arguments(request: RecordedRequest) -> list[Any]:
    """The arguments of every tool call in a request's history, as sent."""
    body = request.body
    if request.format == "chat_completions":
        return [c["function"]["arguments"] for m in body["messages"]
                for c in m.get("tool_calls") or []]
    if request.format == "anthropic_messages":
        return [b["input"] for m in body["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b["type"] == "tool_use"]
    return [i["arguments"] for i in body["input"] if i["type"] == "function_call"]


def tool_results_sent(request: RecordedRequest) -> list[str]:
    body = request.body
    if request.format == "chat_completions":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if request.format == "anthropic_messages":
        return [b.get("content", "") for m in body["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b["type"] == "tool_result"]
    return [i["output"] for i in body["input"] if i["type"] == "function_call_output"]


def statuses(events: list[Event], kind: str) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == kind]


# --- (a) history never carries invalid arguments --------------------------------------------------


async def test_a_call_cut_mid_arguments_does_not_poison_every_later_request(
        mode: str, stream: bool) -> None:
    # the reply is cut by the output limit inside the call: arguments `{"a":`
    script = [Reply(tool_calls=[call("add", '{"a":')], finish_reason="length"),
              Reply("I will answer without the tool: 5.")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await make_agent(server, mode, stream).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert result.output == "I will answer without the tool: 5."
    assert len(server.model_requests) == 2  # accepted at once, nothing retried
    assert [a if isinstance(a, dict) else json.loads(a)
            for a in sent_arguments(server.model_requests[1])] == [{}]
    assert "cut off by the output-token limit" in tool_results_sent(server.model_requests[1])[0]
    assert ran == []
    assert result.messages[2].tool_calls[0].arguments == "{}"  # stored valid, too


async def test_unparseable_arguments_are_stored_as_an_empty_object(mode: str) -> None:
    script = [Reply(tool_calls=[call("add", "a=2, b=3")]), Reply("sorry")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await make_agent(server, mode).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert "could not be used" in tool_results_sent(server.model_requests[1])[0]
    assert result.messages[2].tool_calls[0].arguments == "{}"


async def test_repaired_arguments_are_stored_as_the_json_that_ran(mode: str) -> None:
    script = [Reply(tool_calls=[call("add", "{'a': 2, 'b': 3,}")]), Reply("5")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await make_agent(server, mode).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert ran == [(2, 3)]
    assert json.loads(result.messages[2].tool_calls[0].arguments) == {"a": 2, "b": 3}


# --- (b) a request the server calls malformed is not resent unchanged ---------------------------


async def test_a_malformed_request_error_is_not_retried_unchanged(mode: str, stream: bool) -> None:
    events: list[Event] = []
    # what a regression (resending the same bytes) would be served; strict=False: unserved
    script = [Fault.status(500, body=LLAMACPP_500)] * 6
    with FakeModelServer(script, strict=False) as server:
        result = await make_agent(server, mode, stream, events).run("What is 2+3?",
                                                                    raise_on_error=False)
    assert result.stop_reason == "error"
    assert len(server.model_requests) == 1  # nothing to repair in a fresh history: stop at once
    assert result.error is not None
    assert "Failed to parse tool call arguments as JSON" in result.error
    assert "rejected the request" in result.error
    assert not statuses(events, "retrying")


async def test_a_rejected_history_is_repaired_once_then_sent() -> None:
    # Anthropic rejects a thinking block whose signature another model made
    rejected = Fault.status(400, body={"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}})
    events: list[Event] = []
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})], reasoning="add them",
                    signature="sig-from-another-model"),
              rejected, Reply("5")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, "anthropic_messages", False, events).run("2+3?")
    assert result.stop_reason == "completed", result.error
    first, second = server.model_requests[1:3]
    assert first.raw_body != second.raw_body
    assert "thinking" in json.dumps(first.body["messages"])
    assert "thinking" not in json.dumps(second.body["messages"])
    (repair,) = statuses(events, "history_repaired")
    assert "signature" in repair.message


async def test_a_rejection_that_survives_the_repair_stops_with_the_cause() -> None:
    script = [Reply(tool_calls=[call("add", '{"a": 2,  "b": 3}')]),
              Fault.status(500, body=LLAMACPP_500), Fault.status(500, body=LLAMACPP_500)]
    with FakeModelServer(script) as server:
        result = await make_agent(server).run("2+3?", raise_on_error=False)
    assert result.stop_reason == "error"
    assert len(server.model_requests) == 3  # the call, the rejection, one repaired try
    assert sent_arguments(server.model_requests[2]) == ['{"a":2,"b":3}']
    assert result.error is not None and "Failed to parse tool call arguments" in result.error


def test_the_llamacpp_fake_rejects_what_llamacpp_rejects() -> None:
    import httpx

    body = {"model": "m", "messages": [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "cut"}]}
    with FakeModelServer([], flavor="llamacpp") as strict, \
            FakeModelServer([Reply("ok")]) as lenient:
        rejected = httpx.post(strict.base_url + "/chat/completions", json=body)
        accepted = httpx.post(lenient.base_url + "/chat/completions", json=body)
    assert rejected.status_code == 500
    message = rejected.json()["error"]["message"]
    assert message.startswith("Failed to parse tool call arguments as JSON: [json.exception")
    assert accepted.status_code == 200


async def test_a_history_recorded_with_broken_arguments_is_sent_valid(mode: str) -> None:
    from loopwright.messages import ToolCall, assistant, tool_result, user

    cut = ToolCall(id="call_1", name="add", arguments='{"a":')
    history = [user("2+3?"), assistant(tool_calls=[cut]),
               tool_result(cut, "cut off", is_error=True), assistant("Let me try again.")]
    with FakeModelServer([Reply("5")], flavor="llamacpp") as server:
        result = await make_agent(server, mode).run("again", history=history)
    assert result.stop_reason == "completed", result.error
    assert [a if isinstance(a, dict) else json.loads(a)
            for a in sent_arguments(server.model_requests[0])] == [{}]


# --- (c, d) identical calls in one reply; the doom-loop guard counts replies ----------------------


async def test_identical_calls_in_one_reply_run_once(mode: str) -> None:
    same = call("add", {"a": 2, "b": 3})
    script = [Reply(tool_calls=[same, same, call("add", {"a": 1, "b": 1}), same]), Reply("5")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode).run("2+3 and 1+1?")
    assert result.stop_reason == "completed", result.error
    assert sorted(ran) == [(1, 1), (2, 3)]  # read-only calls run concurrently, in any order
    results = tool_results_sent(server.model_requests[1])
    assert results[0] == "5" and results[2] == "2"
    assert "duplicate of call 1" in results[1] and "duplicate of call 1" in results[3]


@pytest.mark.parametrize("copies", [7, 20])
async def test_the_same_call_written_many_times_in_one_reply_does_not_stop_the_run(
        mode: str, stream: bool, copies: int) -> None:
    # Qwen2.5-Coder-0.5B wrote `add(2, 3)` 7 to 20 times in one reply; calls 1-2 ran, call 3 was
    # warned and call 4 stopped the run with an empty output before the model saw anything
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})] * copies), Reply("2+3 = 5")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode, stream).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert result.output == "2+3 = 5"
    assert ran == [(2, 3)]
    assert len(tool_results_sent(server.model_requests[1])) == copies


async def test_the_loop_guard_stops_only_after_the_model_saw_its_warning() -> None:
    # a runaway reply repeating a call with its result known is answered with that result and
    # the next request asks for an answer without tools; still calling there stops the run
    runaway = Reply(tool_calls=[call("add", {"a": 2, "b": 3})] * 7)
    with FakeModelServer([runaway] * 3) as server:
        result = await make_agent(server).run("What is 2+3?")
    assert result.stop_reason == "loop_detected"
    assert len(server.model_requests) == 3
    assert ran == [(2, 3)]  # reply 1; reply 2 is given its known result; reply 3 stops
    assert any("you already have the result" in m.content for m in result.messages)
    assert ANSWER_NOW_NOTE in last_user_text(server.model_requests[2])  # what the model saw
    assert server.model_requests[2].body["tool_choice"] == "none"
    assert "2+3" not in result.output and "5" in result.output  # its real result, labelled


async def test_a_call_repeated_without_copies_is_warned_on_the_third_reply() -> None:
    one = Reply(tool_calls=[call("add", {"a": 2, "b": 3})])
    with FakeModelServer([one] * 3 + [Reply("5")]) as server:
        result = await make_agent(server).run("What is 2+3?")
    assert result.output == "5"
    assert ran == [(2, 3), (2, 3)]  # a poll may change: a plain repeat runs once more
    warned = tool_results_sent(server.model_requests[3])
    assert any("takes your tools away" in text and "last result was: 5" in text
               for text in warned)
    assert "tool_choice" not in server.model_requests[3].body  # it may still change course


# --- (e) a per-reply call limit ------------------------------------------------------------------


async def test_a_cut_runaway_batch_runs_only_up_to_the_limit(mode: str) -> None:
    # 21 calls in one reply cut by the output limit: 20 whole, the last cut mid-arguments
    calls = [call("add", {"a": n, "b": n}) for n in range(20)] + [call("add", '{"a": 20, "b')]
    script = [Reply(tool_calls=calls, finish_reason="length"), Reply("done")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await make_agent(server, mode, max_tool_calls_per_reply=8).run("sums")
    assert result.stop_reason == "completed", result.error
    assert sorted(ran) == [(n, n) for n in range(8)]  # concurrently (read-only): any order
    results = tool_results_sent(server.model_requests[1])
    assert len(results) == 21
    assert all("at most 8 calls" in text for text in results[8:20])
    assert "cut off" in results[20]


async def test_ten_thousand_calls_in_one_reply_run_only_the_default_limit() -> None:
    calls = [call("add", {"a": n, "b": 0}) for n in range(10_000)]
    script = [Reply(tool_calls=calls, chunk_size=4096), Reply("done")]
    with FakeModelServer(script) as server:
        result = await make_agent(server).run("sums")
    assert result.stop_reason == "completed", result.error
    assert len(ran) == 64
    results = tool_results_sent(server.model_requests[1])
    assert len(results) == 10_000 and "at most 64 calls" in results[-1]


# --- (f, h) an empty reply is retried with a nudge; discarded replies still count -----------------


def last_user_text(request: RecordedRequest) -> str:
    body = request.body
    if request.format == "responses":
        return str(body["input"][-1]["content"])
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else str(content[-1]["text"])


async def test_an_empty_reply_is_retried_with_a_nudge_not_the_same_bytes(
        mode: str, stream: bool) -> None:
    # at temperature 0 the identical request gets the identical empty reply
    with FakeModelServer([Reply(), Reply("5")]) as server:
        result = await make_agent(server, mode, stream, temperature=0).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    first, second = server.model_requests
    assert first.raw_body != second.raw_body
    assert "empty" in last_user_text(second) and "What is 2+3?" in last_user_text(second)
    assert all("empty" not in m.content for m in result.messages)  # the nudge is not history


async def test_an_empty_reply_after_tool_results_is_nudged_with_the_request_restated(
        mode: str) -> None:
    # bench dev2 split, 1.5B, native: after four results an empty reply; nudged with "Your last
    # reply was empty. Reply now: call one of the tools, or give your answer as text." alone, it
    # answered "I'm sorry, but I'm not sure what you're asking."
    prompt = "Add 2 and 3 with the add tool, then tell me the sum."
    script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply(), Reply("5")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode).run(prompt)
    assert result.output == "5"
    nudge = last_user_text(server.model_requests[2])
    assert "Your last reply was empty" in nudge and prompt in nudge
    assert all("was empty" not in m.content for m in result.messages)  # not history


async def test_the_tokens_of_a_discarded_empty_reply_still_count(mode: str, stream: bool) -> None:
    script = [Reply(usage=ScriptedUsage(input_tokens=100, output_tokens=3)),
              Reply("5", usage=ScriptedUsage(input_tokens=120, output_tokens=5))]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode, stream).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert (result.usage.input_tokens, result.usage.output_tokens) == (220, 8)
    assert result.usage.requests == 2


async def test_two_empty_replies_fail_the_run_but_still_count(mode: str) -> None:
    script = [Reply(usage=ScriptedUsage(input_tokens=100, output_tokens=1))] * 2
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode).run("What is 2+3?", raise_on_error=False)
    assert result.stop_reason == "error"
    assert (result.usage.input_tokens, result.usage.requests) == (200, 2)


async def test_an_abandoned_stream_still_counts_as_a_request(mode: str) -> None:
    cut = Fault.cut_stream(Reply("a reply that dies half way through",
                                 usage=ScriptedUsage(input_tokens=100, output_tokens=9)),
                           after_chunks=3)
    script = [cut, Reply("whole", usage=ScriptedUsage(input_tokens=100, output_tokens=2))]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode, stream=True).run("hi")
    assert result.stop_reason == "completed", result.error
    assert result.usage.requests == 2
    if mode == "anthropic_messages":  # its message_start, sent before the cut, has the prompt
        assert result.usage.input_tokens == 200


# --- (g) arguments that carry the schema instead of values ----------------------------------------

SCHEMA_COPY = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"]}
FRAGMENTS = {"a": {"type": "integer"}, "b": {"type": "integer"}}


async def test_arguments_that_copy_the_schema_are_told_the_parameters(mode: str) -> None:
    # the 0.5B model sent its schema back as arguments seven times in a row
    echoes = [SCHEMA_COPY, FRAGMENTS] * 3 + [SCHEMA_COPY]
    script = [*(Reply(tool_calls=[call("add", e)]) for e in echoes),
              Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("5")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode).run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert ran == [(2, 3)]
    results = tool_results_sent(server.model_requests[7])
    assert len(results) == 7
    # no made-up example: `{"a": 1, "b": 1}` copied would run (issue 28)
    assert all("repeat its schema" in r and "with: a (integer), b (integer)" in r
               and '"a": 1' not in r for r in results)
    assert '"type", "properties", "required"' in results[0]
    assert '"a.type", "b.type"' in results[1]


async def test_values_written_inside_a_schema_copy_fill_the_example() -> None:
    echo = {"type": "object", "properties": {"a": 2, "b": 3}, "required": ["a", "b"]}
    with FakeModelServer([Reply(tool_calls=[call("add", echo)]), Reply("ok")]) as server:
        await make_agent(server).run("What is 2+3?")
    assert ran == []
    assert 'for example: {"a": 2, "b": 3}' in tool_results_sent(server.model_requests[1])[0]


async def test_a_tool_whose_parameter_is_named_type_is_not_an_echo() -> None:
    @tool(read_only=True)
    def describe(type: str, required: bool) -> str:
        """Describe a kind of thing."""
        return f"{type} {required}"

    script = [Reply(tool_calls=[call("describe", {"type": "cat", "required": True})]),
              Reply("ok")]
    with FakeModelServer(script) as server:
        await make_agent(server, tools=[describe]).run("describe")
    assert tool_results_sent(server.model_requests[1]) == ["cat True"]


async def test_empty_replies_of_a_provider_fallen_back_from_still_count() -> None:
    empty = Reply(usage=ScriptedUsage(input_tokens=100, output_tokens=1))
    with FakeModelServer([empty, empty]) as primary, \
            FakeModelServer([Reply("5", usage=ScriptedUsage(input_tokens=50,
                                                            output_tokens=2))]) as backup:
        agent = make_agent(primary, fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert (result.usage.input_tokens, result.usage.requests) == (250, 3)


async def test_a_request_every_provider_rejects_as_malformed_is_still_repaired_once() -> None:
    events: list[Event] = []
    rejected = Fault.status(500, body=LLAMACPP_500)
    with FakeModelServer([Reply(tool_calls=[call("add", '{"a": 2,  "b": 3}')]), rejected]
                         ) as primary, FakeModelServer([rejected, Reply("5")]) as backup:
        agent = make_agent(primary, events=events,
                           fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("What is 2+3?")
    assert result.stop_reason == "completed", result.error
    assert len(statuses(events, "history_repaired")) == 1
    assert sent_arguments(backup.model_requests[1]) == ['{"a":2,"b":3}']


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file."""
    return "port = 8417\n" if path == "config.ini" else "no such file"


async def test_a_call_to_a_tool_that_does_not_exist_is_answered_with_an_example_call(
        mode: str) -> None:
    # Qwen2.5-Coder-1.5B asked for `grep` when it had only read_file; told only the names, it
    # apologised ("I can't find a tool named 'grep'…") and never read the file
    wrong = call("grep", '{"pattern": "port", "file": "config.ini"}')
    script = [Reply(text="To find the port number set in `config.ini`, you can use the `grep` "
                         "command to search for the line containing the port number.",
                    tool_calls=[wrong]),
              Reply(tool_calls=[call("read_file", {"path": "config.ini"})]),
              Reply("The port is 8417.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, mode, tools=[read_file]).run(
            "What port number is set in config.ini?")
    assert result.output == "The port is 8417."
    [told] = tool_results_sent(server.model_requests[1])
    assert "there is no tool named 'grep'. Tools you can call: read_file." in told
    # the example names the file the request names: small models copy examples value for value
    assert 'for example: {"name": "read_file", "arguments": {"path": "config.ini"}}' in told


@tool
def replace_in_file(path: str, old: str, new: str) -> str:
    """Replace text in a file of the workspace."""
    ran.append((len(path), len(new)))
    return f"replaced in {path}"


@pytest.mark.parametrize("fmt", ["native", "prompt"])
async def test_a_call_that_copies_the_examples_placeholders_is_not_run(fmt: str) -> None:
    # prompt mode, 0.5B, bench task `edit_debug`: told the tool `config.ini` does not exist,
    # "for example: {"name": "replace_in_file", "arguments": {"path": "...", "old": "...", "new":
    # "..."}}", it sent exactly that, and the tool ran on a file named "..."
    copied = '{"name": "replace_in_file", "arguments": {"path": "...", "old": "...", "new": "..."}}'
    fixed = ('{"name": "replace_in_file", "arguments": {"path": "config.ini", '
             '"old": "debug = false", "new": "debug = true"}}')
    script = [Reply('<tool_call>\n{"name": "config.ini", "arguments": {"debug": true}}\n'
                    '</tool_call>'), Reply(f"<tool_call>\n{copied}\n</tool_call>"),
              Reply(f"<tool_call>\n{fixed}\n</tool_call>"), Reply("Done: debug is now true.")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await make_agent(server, tools=[read_file, replace_in_file],
                                  tool_call_format=fmt).run(
            "In config.ini, change debug = false to debug = true.")
    assert result.output == "Done: debug is now true."
    assert ran == [(len("config.ini"), len("debug = true"))]  # never the placeholder call
    told = [m.content for m in result.messages if m.role == "tool"]
    # the error shows no example with a value the model could copy and run: `old` and `new`
    # are not in the request, so it names the tools, and no parameter in words either (issue 28:
    # the 0.5B copied those words as values); the copy replayed here is of the older example,
    # and a placeholder is still never run
    assert "Tools you can call: replace_in_file, read_file." in told[0]
    assert "(string)" not in told[0]
    assert '"..."' not in told[0]
    assert told[1].startswith("Error: 'path', 'old', 'new' still hold the example's placeholder")


@tool(read_only=True)
def list_files() -> list[str]:
    """List the names of the files in the workspace."""
    ran.append((0, 0))
    return ["four.py", "one.txt", "three.md", "two.txt"]


async def test_a_schema_copied_into_a_call_of_a_tool_without_arguments_runs_it(mode: str) -> None:
    # native mode, 0.5B, bench task `count_files`: it sent this four replies in a row, each time
    # told to send values "for example: {}", until the loop guard stopped the run
    copy = ('{"name": "list_files", "arguments": {"additionalProperties": false, '
            '"properties": {}, "type": "object"}}')
    with FakeModelServer([Reply(copy), Reply("4")], flavor="llamacpp") as server:
        result = await make_agent(server, mode, tools=[list_files]).run(
            "How many files are in the workspace? Answer with a number.")
    assert result.stop_reason == "completed", result.error
    assert result.output == "4" and ran == [(0, 0)]
    assert tool_results_sent(server.model_requests[1]) == [
        '["four.py", "one.txt", "three.md", "two.txt"]']


async def test_a_list_sent_as_the_arguments_of_a_tool_without_arguments_runs_it() -> None:
    # native mode, 0.5B, bench task `count_files`, another run: the workspace path as a list
    paths = '{"name": "list_files", "arguments": ["/tmp/lw-real-model-uv7kn3g1/project"]}'
    with FakeModelServer([Reply(paths), Reply("4")], flavor="llamacpp") as server:
        result = await make_agent(server, tools=[list_files]).run("How many files?")
    assert result.output == "4" and ran == [(0, 0)]


async def test_copies_of_a_call_without_arguments_are_one_call_whatever_their_arguments(
        mode: str) -> None:
    # native mode, streamed, 0.5B, bench task `count_files`: given the list, it called list_files
    # again three times in one reply with the list pasted into a copy of the schema, and a cut
    # fourth; each reply's copies ran as new calls, and it never answered
    first = ('{"name": "list_files", "arguments": {"additionalProperties": false, '
             '"properties": {}, "type": "object"}}')
    pasted = ('{"name": "list_files", "arguments": {"additionalProperties": false, '
              '"properties": {"files": ["four.py", "one.txt", "three.md", "two.txt"]}, '
              '"type": "object"}}')
    runaway = "\n".join([pasted] * 3) + '\n{"name": "list_files", "arguments": {"add'
    script = [Reply(first), Reply(runaway, finish_reason="length"), Reply("4")]
    with FakeModelServer(script, flavor="llamacpp") as server:
        result = await make_agent(server, mode, stream=True, tools=[list_files]).run(
            "How many files are in the workspace? Answer with a number.")
    assert result.output == "4" and ran == [(0, 0)]  # the copies are the call it had made
    told = [m.content for m in result.messages if m.role == "tool"]
    assert "you already have the result of this exact call" in told[1]
    assert ANSWER_NOW_NOTE in server.model_requests[2].raw_body.decode()  # answer, no tools
    assert {c.arguments for m in result.messages for c in m.tool_calls} == {"{}"}


async def test_a_tool_that_takes_any_keys_is_not_called_with_its_schema() -> None:
    copy = {"additionalProperties": False, "properties": {}, "type": "object"}
    seen: list[dict[str, object]] = []

    def record(arguments: dict[str, object], ctx: object) -> str:
        seen.append(arguments)
        return "ok"

    anything = Tool(name="anything", description="Takes whatever keys it is given.",
                    parameters={"type": "object", "properties": {}}, function=record,
                    raw_arguments=True, read_only=True)

    script = [Reply(tool_calls=[call("anything", copy)]), Reply("done")]
    with FakeModelServer(script) as server:
        await make_agent(server, tools=[anything]).run("go")
    assert seen == [] and "repeat its schema" in tool_results_sent(server.model_requests[1])[0]


STOCK = {"apples": 42, "pears": 17}


@tool(read_only=True)
def get_stock(item: str) -> int:
    """Return how many units of an item are in stock."""
    ran.append((STOCK[item], 0))
    return STOCK[item]


async def test_values_written_beside_a_copy_of_the_schema_run_the_call(mode: str) -> None:
    # native mode, 0.5B, bench task `stock_total`: the value is there, the schema's keywords beside
    # it; refused with "repeat its schema", it sent the same bytes until the loop guard stopped it
    echo = ('{"item": "apples", "additionalProperties": false, '
            '"properties": {"item": {"type": "string"}}}')
    with FakeModelServer([Reply(tool_calls=[call("get_stock", echo)]), Reply("42")]) as server:
        result = await make_agent(server, mode, tools=[get_stock]).run(
            "How many apples and pears are in stock together?")
    assert result.output == "42" and ran == [(42, 0)]
    assert tool_results_sent(server.model_requests[1]) == ["42"]


async def test_schema_keywords_beside_no_value_still_get_the_example() -> None:
    echo = {"item": {"type": "string"}, "type": "object", "properties": {}}
    with FakeModelServer([Reply(tool_calls=[call("get_stock", echo)]), Reply("ok")]) as server:
        await make_agent(server, tools=[get_stock]).run("How many apples?")
    assert ran == []
    assert "repeat its schema" in tool_results_sent(server.model_requests[1])[0]


@tool
def run_python(code: str) -> str:
    """Run Python code."""
    return "ran"


async def test_the_unknown_tool_error_has_no_parameter_words_to_copy_as_a_value() -> None:
    # Qwen2.5-Coder-0.5B on the dev2 split called a tool named after the task; told "Call one of
    # them instead: run_python takes code (string).", it sent run_python({"code": "run_python
    # takes code (string)."}) and read_file({"path": "read_file takes path (string)."})
    script = [Reply(tool_calls=[call("rename_constant", {"RETURNS": "MAX_RETRIES"})]),
              Reply("I could not rename it.")]
    with FakeModelServer(script) as server:
        await make_agent(server, tools=[run_python, read_file]).run(
            "Rename the constant RETRIES in settings.py to MAX_RETRIES.")
    [told] = tool_results_sent(server.model_requests[1])
    assert "there is no tool named 'rename_constant'" in told
    assert "run_python" in told and "read_file" in told
    assert "takes" not in told and "(string)" not in told
