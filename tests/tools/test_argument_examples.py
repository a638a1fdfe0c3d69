"""Examples in argument errors take their values from the user's request (issue 12), replayed
through the fake model server with the replies Qwen2.5-Coder-0.5B served by llama.cpp wrote for
the bench task `read_hint` (prompt mode, streamed): it copied `read_file`'s schema as arguments,
was shown `{"path": "your path here"}`, and read "your path here" twice, never notes.txt."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright import Agent, notes, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.examples import PLACEHOLDER, example_arguments

READ_HINT = "Read notes.txt and tell me the password hint word."
SCHEMA_COPY = ('{"name": "read_file", "arguments": {"additionalProperties": false, "properties": '
               '{"path": {"type": "string"}}, "required": ["path"], "type": "object"}}')


@pytest.mark.parametrize("fmt", ["native", "prompt"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_schema_copy_is_answered_with_an_example_naming_the_requests_file(
        tmp_path: Path, fmt: str, stream: bool) -> None:
    (tmp_path / "notes.txt").write_text("Password hint: the word is zebra.\n")
    opened: list[str] = []

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Return the text of a file in the workspace."""
        opened.append(path)
        return (tmp_path / path).read_text()

    # the 0.5B copies the example it is shown: with this one, the copy reads the right file
    copy = '{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    script = [Reply(f"<tool_call>\n{SCHEMA_COPY}\n</tool_call>"),
              Reply(f"<tool_call>\n{copy}\n</tool_call>"), Reply("The hint word is zebra.")]
    with FakeModelServer(script) as server:
        agent = Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                      retry=RetryPolicy(base_delay=0.01, jitter=0), tools=[read_file],
                      workdir=str(tmp_path), tool_call_format=fmt, stream=stream)
        result = await agent.run(READ_HINT)
    error = next(m.content for m in result.messages if m.role == "tool")
    assert error.endswith('for example: {"path": "notes.txt"}')  # was {"path": "your path here"}
    assert result.output == "The hint word is zebra."
    assert opened == ["notes.txt"]


def test_example_values_come_from_the_copy_then_the_request_then_the_schema() -> None:
    schema = {"type": "object", "required": ["path", "old", "count", "mode"], "properties": {
        "path": {"type": "string"}, "old": {"type": "string"}, "count": {"type": "integer"},
        "mode": {"type": "string", "enum": ["fast", "slow"]}}}
    assert example_arguments(schema) == {"path": PLACEHOLDER, "old": PLACEHOLDER, "count": 1,
                                         "mode": "fast"}
    request = "In config.ini, change debug = false to debug = true."
    assert example_arguments(schema, request=request)["path"] == "config.ini"
    assert example_arguments(schema, request=request)["old"] == PLACEHOLDER  # not a path
    assert example_arguments(schema, written={"path": "a.txt"}, request=request)["path"] == "a.txt"
    # a parameter that takes a path but is not text, or a request naming no file: a sample
    numbered = {"type": "object", "properties": {"file": {"type": "integer"}}}
    assert example_arguments(numbered, request=request) == {"file": 1}
    unnamed = "What is the capital of France?"
    assert example_arguments(schema, request=unnamed)["path"] == PLACEHOLDER


@pytest.mark.parametrize("fmt", ["native", "prompt"])
async def test_an_answer_that_copies_the_arguments_of_a_call_is_set_aside(
        tmp_path: Path, fmt: str) -> None:
    # the same task a step later: given notes.txt by a reply of `{"path": "notes.txt"}` and the
    # call, it answered `{"path": "notes.txt"}` — too short for the copied-preamble check; a
    # copy of the arguments is sent back, and the object beside the call is not kept as text.
    # The check reads prose and is opt-in (issue 28): named here on top of the defaults.
    (tmp_path / "notes.txt").write_text("Meeting moved to Friday.\nThe password hint is: "
                                        "marmalade\n")

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Return the text of a file in the workspace."""
        return (tmp_path / path).read_text()

    args = '{"path": "notes.txt"}'
    script = [Reply(f'{args}\n<tool_call>\n{{"name": "read_file", "arguments": {args}}}\n'
                    "</tool_call>"), Reply(args), Reply("The password hint is marmalade.")]
    with FakeModelServer(script) as server:
        agent = Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                      retry=RetryPolicy(base_delay=0.01, jitter=0), tools=[read_file],
                      workdir=str(tmp_path), tool_call_format=fmt,
                      review=["auto", "copied_preamble"])
        result = await agent.run(READ_HINT)
    assert result.output == "The password hint is marmalade."
    third = server.model_requests[2].raw_body.decode()
    assert notes.text(notes.COPY) in third
    assert third.count("notes.txt") == 2  # the request and the call: neither copy
    # the object written above the call block is call JSON, not text (kept, it was copied as
    # the answer three times in the next bench run, each time sent back)
    assert [m.content for m in result.messages if m.tool_calls] == [""]


async def test_an_object_a_tool_returned_may_be_the_answer(tmp_path: Path) -> None:
    @tool(read_only=True)
    def echo(value: str) -> dict[str, str]:
        """Return the object {"value": value}."""
        return {"value": value}

    script = [Reply(tool_calls=[call("echo", {"value": "x"})]), Reply('{"value": "x"}')]
    with FakeModelServer(script) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", tools=[echo],
                             workdir=str(tmp_path)).run("Echo x and give me what it returns.")
    assert result.output == '{"value": "x"}'


@pytest.mark.parametrize("fmt", ["native", "prompt"])
async def test_an_error_never_shows_a_value_the_model_could_copy_and_run(fmt: str) -> None:
    # issue 28: the unknown-tool and validation errors showed `{"path": "..."}`; the 0.5B and
    # the 1.5B copied it and ran it. With no file in the request there is nothing to show but
    # the parameters — in the validation error only: the unknown-tool error names the tools
    # (the 0.5B copied "run_python takes code (string)." into its next call as the code).
    opened: list[str] = []

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Return the text of a file in the workspace."""
        opened.append(path)
        return "hello"

    script = [Reply(tool_calls=[call("grep", {"pattern": "TODO"})]),
              Reply(tool_calls=[call("read_file", {"file": "x"})]), Reply("No TODO found.")]
    with FakeModelServer(script) as server:
        result = await Agent("qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                             retry=RetryPolicy(base_delay=0.01, jitter=0), tools=[read_file],
                             tool_call_format=fmt, stream=False).run("Is there a TODO left?")
    unknown, invalid = (m.content for m in result.messages if m.role == "tool")
    assert "Tools you can call: read_file." in unknown and "(string)" not in unknown
    assert "with: path (string)" in invalid
    assert PLACEHOLDER not in unknown + invalid and "for example" not in unknown + invalid
    assert opened == []
