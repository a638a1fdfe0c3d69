"""The unread-file nudge (issue 12), replayed through the fake model server with the replies
Qwen2.5-Coder-0.5B served by llama.cpp really wrote: asked about a named file, with `read_file`
offered, it answered from what such files usually hold, without a call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ReviewEvent
from loopwright.testing import FakeModelServer, Fault, RecordedRequest, Reply
from loopwright.tools.examples import named_files
from shared_helpers import MISSING_FILE_MADE_UP

FAST = RetryPolicy(base_delay=0.01, jitter=0)
GUESS = "The port number set in config.ini is 8080."  # bench task `read_port`, native, plain
READ_PORT = "What port number is set in config.ini?"
CONFIG = "[server]\nhost = 0.0.0.0\nport = 8417\ndebug = false\n"


def call_text(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def make_agent(server: FakeModelServer, workdir: Path, *, tools: list[Any] | None = None,
               events: list[Event] | None = None, **kw: Any) -> Agent:
    added: list[tuple[int, int]] = []

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Return the text of a file in the workspace."""
        return (workdir / path).read_text()

    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        added.append((a, b))
        return a + b

    kw.setdefault("review", ["auto", "unread_file"])  # opt-in: it reads what an answer is about
    agent = Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k", retry=FAST,
                  tools=tools if tools is not None else [read_file, add], workdir=str(workdir),
                  callbacks=[events.append] if events is not None else [], **kw)
    agent.added = added  # type: ignore[attr-defined]
    return agent


def body(request: RecordedRequest) -> str:
    return request.raw_body.decode()


@pytest.mark.parametrize("fmt", ["native", "prompt"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_an_answer_about_a_file_no_tool_read_is_set_aside_with_the_call_to_make(
        tmp_path: Path, fmt: str, stream: bool) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    script = [Reply(GUESS, chunk_size=7), Reply(call_text("read_file", {"path": "config.ini"})),
              Reply("The port is 8417.")]
    events: list[Event] = []
    with FakeModelServer(script) as server:
        result = await make_agent(server, tmp_path, events=events, tool_call_format=fmt,
                                  stream=stream).run(READ_PORT)
    assert result.output == "The port is 8417."
    second, third = body(server.model_requests[1]), body(server.model_requests[2])
    example = call_text("read_file", {"path": "config.ini"})
    assert "You have not read config.ini yet" in second
    assert json.dumps(f"for example {example}")[1:-1] in second
    assert "8080" not in second and "8080" not in third  # the guess is left out
    assert "port = 8417" in third
    assert any(m.content == GUESS for m in result.messages)  # it stays in the session
    # the note is a turn of its own: merged into the request, the 0.5B answered the request
    # again (missing_file, read_then_add) where as its own turn it made the call
    users = [m["content"] for m in server.model_requests[1].body["messages"]
             if m["role"] == "user"]
    assert users[0] == READ_PORT and users[1].startswith("You have not read config.ini yet")
    nudges = [e for e in events if isinstance(e, ReviewEvent) and e.check == "unread_file"]
    assert [(e.verdict, "config.ini" in e.reason) for e in nudges] == [("set_aside", True)]


async def test_a_server_that_wants_alternating_roles_gets_the_note_merged(
        tmp_path: Path) -> None:
    # strict chat templates (Mistral, Gemma) raise on two user turns in a row
    (tmp_path / "config.ini").write_text(CONFIG)
    strict = {"error": {"code": 500, "type": "server_error", "message":
                        "Conversation roles must alternate user/assistant/user/assistant/..."}}
    script = [Reply(GUESS), Fault.status(500, strict),
              Reply(call_text("read_file", {"path": "config.ini"})), Reply("The port is 8417.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, tmp_path).run(READ_PORT)
    assert result.output == "The port is 8417."
    for request in server.model_requests[2:]:  # the retry and every later request
        users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
        assert len(users) == 1 and users[0].startswith(READ_PORT)
        assert "You have not read config.ini yet" in users[0]


async def test_a_sum_of_made_up_numbers_is_sent_back_to_read_the_file_first(
        tmp_path: Path) -> None:
    # bench task `read_then_add`, native, plain: it added 2 and 3 without reading numbers.txt,
    # replayed that call and chained on, and, asked to answer without tools, gave the guess
    (tmp_path / "numbers.txt").write_text("first = 19\nsecond = 23\n")
    runaway = "\n".join(call_text("add", {"a": a, "b": b})
                        for a, b in [(2, 3), (5, 8), (10, 12), (15, 17), (20, 22)])
    script = [Reply(call_text("add", {"a": 2, "b": 3})), Reply(runaway),
              Reply("The sum of 2 and 3 is 5."),
              Reply(call_text("read_file", {"path": "numbers.txt"})),
              Reply(call_text("add", {"a": 19, "b": 23})), Reply("The sum is 42.")]
    with FakeModelServer(script) as server:
        agent = make_agent(server, tmp_path)
        result = await agent.run("numbers.txt holds two numbers. Read it and add them with the "
                                 "add tool. What is the sum?")
    assert result.output == "The sum is 42."
    assert agent.added == [(2, 3), (19, 23)]  # type: ignore[attr-defined]
    assert "Do not call any tool now" in body(server.model_requests[2])  # asked without tools
    fourth = server.model_requests[3]
    assert "You have not read numbers.txt yet" in body(fourth) and fourth.body.get("tools")


# bench task `read_two_files`, prompt mode, streamed: it read a.txt, then described reading
# b.txt; told to read b.txt, it described the call again and wrote the note's first sentence
DESCRIBES = ("To read the text of `b.txt`, you can use the `read_file` tool. The `read_file` tool "
             "takes a `path` as an argument and returns the text of the file in the workspace."
             "\n\nHere's the JSON response for the `read_file` tool:\n\nThis response "
             "indicates that the `read_file` tool has been called with the argument `\"b.txt\"`. "
             "The tool returns the text of `b.txt` in the workspace.\n\nThe `read_file` tool "
             "takes a `path` as an argument and returns the text of the file in the workspace. "
             "The `read_file` tool takes a\n\nYou have not read a.txt yet: no tool has opened "
             "it in this conversation,")


@pytest.mark.parametrize("fmt", ["native", "prompt"])
async def test_a_reply_that_repeats_the_note_gets_the_note_again(tmp_path: Path,
                                                                 fmt: str) -> None:
    (tmp_path / "a.txt").write_text("The colour is red.\n")
    (tmp_path / "b.txt").write_text("The colour is blue.\n")
    said = ("The response indicates that the `read_file` tool has been called with the "
            "argument `\"a.txt\"`. The tool returns the text of `a.txt` in the workspace.\n\n")
    script = [Reply(call_text("read_file", {"path": "a.txt"})), Reply(said),
              Reply(DESCRIBES, finish_reason="length"), Reply(DESCRIBES),
              Reply(call_text("read_file", {"path": "b.txt"})),
              Reply("a.txt names red, b.txt names blue.")]
    events: list[Event] = []
    with FakeModelServer(script) as server:
        result = await make_agent(server, tmp_path, events=events, tool_call_format=fmt,
                                  stream=True).run(
            "Read a.txt and b.txt. Which colour does each file name?")
    assert result.output == "a.txt names red, b.txt names blue."
    nudges = [e for e in events if isinstance(e, ReviewEvent) and e.check == "unread_file"]
    assert len(nudges) == 2
    assert body(server.model_requests[4]).count("You have not read b.txt yet") == 2
    assert DESCRIBES[:40] in body(server.model_requests[3])  # cut: kept for the continuation
    assert json.dumps(DESCRIBES)[1:-1] not in body(server.model_requests[4])  # set aside


async def test_the_note_is_given_at_most_twice(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("The colour is blue.\n")
    script = [Reply("b.txt names green."), *[Reply(DESCRIBES)] * 6]
    events: list[Event] = []
    with FakeModelServer(script, strict=False) as server:
        result = await make_agent(server, tmp_path, events=events).run(
            "Which colour does b.txt name?")
    nudges = [e for e in events if isinstance(e, ReviewEvent) and e.check == "unread_file"]
    assert len(nudges) == 2
    assert DESCRIBES not in result.output  # an echo of the note is never the answer
    assert len(server.model_requests) < 6  # the other answer checks are bounded too


@pytest.mark.parametrize("request_text", ["What does missing.txt say? Read it.",
                                          "Que dit missing.txt ? Lis-le."])
async def test_a_file_that_does_not_exist_is_never_unread_whatever_the_request_says(
        tmp_path: Path, request_text: str) -> None:
    # the check once also counted a missing file when the request's English words asked to read
    # it ("read", "says"): a French request was treated otherwise (issue 28). It reads no words
    # now: only a file in the workspace counts, in any language
    with FakeModelServer([Reply('missing.txt says "Missing file."')]) as server:
        result = await make_agent(server, tmp_path).run(request_text)
    assert result.output == 'missing.txt says "Missing file."'
    assert len(server.model_requests) == 1


async def test_a_request_in_french_about_a_file_in_the_workspace_gets_the_note(
        tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    script = [Reply("Le port défini dans config.ini est 8080."),
              Reply(call_text("read_file", {"path": "config.ini"})),
              Reply("Le port est 8417.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, tmp_path).run(
            "Quel numéro de port est défini dans config.ini ?")
    assert result.output == "Le port est 8417."
    assert "You have not read config.ini yet" in body(server.model_requests[1])


@pytest.mark.parametrize(("prompt", "reads"), [
    ("What is Node.js? Answer in one sentence.", True),  # no such file, not asked to read one
    ("Here is config.ini:\n```\nport = 8417\n```\nWhich port does it set?", True),  # pasted
    ("What port number is set in config.ini?", False),  # no tool takes a path
])
async def test_no_nudge_without_a_file_to_read_or_a_tool_to_read_it(
        tmp_path: Path, prompt: str, reads: bool) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)

    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        return a + b

    with FakeModelServer([Reply("An answer.")]) as server:
        result = await make_agent(server, tmp_path, tools=None if reads else [add]).run(prompt)
    assert result.output == "An answer." and len(server.model_requests) == 1


async def test_a_file_read_earlier_in_the_conversation_is_not_unread(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    script = [Reply(call_text("read_file", {"path": "./config.ini"})), Reply("Port 8417."),
              Reply("The host is 0.0.0.0.")]
    with FakeModelServer(script) as server:
        agent = make_agent(server, tmp_path)
        first = await agent.run(READ_PORT)
        second = await agent.run("And which host does config.ini set?", history=first.messages)
    assert second.output == "The host is 0.0.0.0." and len(server.model_requests) == 3


async def test_a_call_of_a_tool_that_does_not_exist_read_nothing(tmp_path: Path) -> None:
    # bench task `read_port`, prompt mode, 1.5B: it asked `grep` for config.ini, and told there
    # is no such tool, apologised; that was the run's answer
    (tmp_path / "config.ini").write_text(CONFIG)
    grep = call_text("grep", {"pattern": "port", "file": "config.ini"})
    script = [Reply("To find the port number set in `config.ini`, you can use the `grep` "
                    f"command.\n<tool_call>\n{grep}\n</tool_call>"),
              Reply("I apologize, but I can't help with that."),
              Reply(call_text("read_file", {"path": "config.ini"})), Reply("The port is 8417.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, tmp_path, tool_call_format="prompt").run(READ_PORT)
    assert result.output == "The port is 8417."
    assert "You have not read config.ini yet" in body(server.model_requests[2])


async def test_a_made_up_result_for_a_file_gets_the_call_to_make_first(tmp_path: Path) -> None:
    # bench task `missing_file`, prompt mode, 1.5B: three made-up results and no call; the run
    # ended with no answer. Told twice that only the runtime writes results, it made up two
    # more; the nudge naming the call now answers the first. (Here the file exists: the check
    # counts only files in the workspace.)
    (tmp_path / "missing.txt").write_text("draft\n")
    made_up = MISSING_FILE_MADE_UP
    script = [Reply(made_up[0]), Reply(call_text("read_file", {"path": "missing.txt"})),
              Reply("missing.txt says draft.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, tmp_path, tool_call_format="prompt",
                                  review="all").run("What does missing.txt say? Read it.")
    assert result.output == "missing.txt says draft."
    second = body(server.model_requests[1])
    assert "You have not read missing.txt yet" in second
    assert "imitated the runtime's markup" not in second
    assert json.dumps(made_up[0])[1:-1] not in second  # the reply nudged is set aside


async def test_the_nudge_is_given_once_per_run(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    with FakeModelServer([Reply(GUESS), Reply("It is 8080.")]) as server:
        result = await make_agent(server, tmp_path).run(READ_PORT)
    assert result.output == "It is 8080." and len(server.model_requests) == 2


async def test_no_nudge_for_an_answer_asked_for_without_tools_or_when_switched_off(
        tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    with FakeModelServer([Reply(GUESS), Reply(GUESS)]) as server:
        last_round = await make_agent(server, tmp_path, max_turns=1).run(READ_PORT)
        off = await make_agent(server, tmp_path, review_off=["unread_file"]).run(READ_PORT)
    assert last_round.output == GUESS and off.output == GUESS
    assert len(server.model_requests) == 2


def test_file_names_are_found_and_urls_versions_and_addresses_are_not() -> None:
    assert named_files("Read a.txt and `b.txt`, then src/app.py.") == ["a.txt", "b.txt",
                                                                      "src/app.py"]
    assert named_files("What is in /etc/hosts.conf or ~/notes.md?") == ["/etc/hosts.conf",
                                                                        "~/notes.md"]
    assert named_files("See https://example.com/a.html, mail me@example.org, e.g. v3.14.1") == []
