"""`Agent[Deps, Output]`: typed structured output (tool or native json_schema, every API mode,
streaming or not), validation errors sent back up to `output_retries`, `deps` reaching tools."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict

from loopwright import Agent
from loopwright.errors import AuthError, ConfigError, OutputValidationError
from loopwright.events import Event, PartialOutput
from loopwright.testing import FakeModelServer, Fault, Reply, call
from loopwright.tools.base import ToolContext, tool

MODES = ["chat_completions", "responses", "anthropic_messages"]


class City(pydantic.BaseModel):
    name: str
    population: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


def agent_for(server: FakeModelServer, output_type: Any, **options: Any) -> Agent[Any, Any]:
    return Agent("fake-model", base_url=server.base_url, api_key="k", output_type=output_type,
                 **options)


@pytest.mark.parametrize("api_mode", MODES)
@pytest.mark.parametrize("stream", [True, False])
async def test_a_final_result_call_becomes_the_typed_output(api_mode: str, stream: bool) -> None:
    script = [Reply(tool_calls=[call("final_result", {"name": "Paris", "population": 2})])]
    with FakeModelServer(script) as server:
        agent = agent_for(server, City, api_mode=api_mode, stream=stream)
        result = await agent.run("biggest city?")
    assert result.stop_reason == "completed"
    assert result.output == City(name="Paris", population=2)
    assert json.loads(result.text) == {"name": "Paris", "population": 2}
    sent = server.model_requests[0].body
    names = [t.get("name") or t.get("function", {}).get("name") for t in sent["tools"]]
    assert names == ["final_result"]


@pytest.mark.parametrize(("output_type", "arguments", "expected"), [
    (Point, {"x": 1, "y": 2}, Point(1, 2)),
    (Pair, {"left": "a", "right": "b"}, {"left": "a", "right": "b"}),
    (int, {"response": 42}, 42),
    (list[City], {"response": [{"name": "A", "population": 1}]}, [City(name="A", population=1)]),
    (City | Point, {"response": {"x": 3, "y": 4}}, Point(3, 4)),
])
async def test_every_kind_of_output_type(output_type: Any, arguments: dict[str, Any],
                                         expected: Any) -> None:
    with FakeModelServer([Reply(tool_calls=[call("final_result", arguments)])]) as server:
        result = await agent_for(server, output_type).run("x")
    assert result.output == expected
    schema = server.model_requests[0].body["tools"][0]["function"]["parameters"]
    assert schema["type"] == "object"


async def test_invalid_output_is_sent_back_with_the_error_then_accepted() -> None:
    script = [Reply(tool_calls=[call("final_result", {"name": "Paris", "population": "many"})]),
              Reply(tool_calls=[call("final_result", {"name": "Paris", "population": 2})])]
    events: list[Event] = []
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", output_type=City,
                      callbacks=[events.append])
        result = await agent.run("x")
    assert result.output == City(name="Paris", population=2)
    feedback = server.model_requests[1].body["messages"][-1]
    assert feedback["role"] == "user"
    assert "population: Input should be a valid integer" in feedback["content"]
    assert [e.kind for e in events if e.type == "status"] == ["output_retry"]


async def test_output_still_invalid_after_the_retries_stops_with_a_named_reason() -> None:
    bad = Reply(tool_calls=[call("final_result", {"name": "Paris"})])
    with FakeModelServer([bad, bad]) as server:
        result = await agent_for(server, City, output_retries=1).run("x", raise_on_error=False)
    assert result.stop_reason == "output_invalid"
    assert result.error is not None and "population: Field required" in result.error
    assert len(server.model_requests) == 2
    with FakeModelServer([bad, bad]) as server, pytest.raises(OutputValidationError):
        await agent_for(server, City, output_retries=1).run("x", raise_on_error=True)


async def test_a_plain_text_answer_is_asked_to_use_the_tool() -> None:
    script = [Reply("It is Paris."), Reply('{"name": "Paris", "population": 2}')]
    with FakeModelServer(script) as server:
        result = await agent_for(server, City).run("x")
    assert result.output == City(name="Paris", population=2)
    assert "Call the `final_result` tool" in server.model_requests[1].body["messages"][-1][
        "content"]


@pytest.mark.parametrize("api_mode", ["chat_completions", "responses"])
async def test_native_json_schema_mode_sends_the_response_format(api_mode: str) -> None:
    with FakeModelServer([Reply('{"name": "Rome", "population": 3}')]) as server:
        agent = agent_for(server, City, api_mode=api_mode, output_mode="native")
        result = await agent.run("x")
    assert result.output == City(name="Rome", population=3)
    body = server.model_requests[0].body
    assert "tools" not in body
    if api_mode == "chat_completions":
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        schema = fmt["json_schema"]["schema"]
    else:
        fmt = body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["name"] == "final_result"
        schema = fmt["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name", "population"]


async def test_auto_mode_is_native_for_openai_models_and_a_tool_elsewhere() -> None:
    with FakeModelServer([Reply('{"name": "Rome", "population": 3}')]) as server:
        agent = Agent("gpt-4o", base_url=server.base_url, api_key="k", output_type=City)
        assert (await agent.run("x")).output == City(name="Rome", population=3)
    assert "response_format" in server.model_requests[0].body


async def test_streaming_yields_partial_output_as_the_json_arrives() -> None:
    arguments = {"name": "Buenos Aires", "population": 15000000}
    script = [Reply(tool_calls=[call("final_result", arguments)], chunk_size=5)]
    with FakeModelServer(script) as server:
        agent = agent_for(server, City)
        events = [e async for e in agent.stream("x")]
    partial = [e for e in events if isinstance(e, PartialOutput)]
    assert len(partial) >= 2
    assert all(isinstance(p.output, City) for p in partial)  # validated, as they arrive
    assert partial[-1].output == City(**arguments) and partial[-1].data == arguments
    assert partial[0].output.population < arguments["population"]  # digits still arriving
    done = events[-1]
    assert done.type == "done" and done.result.output == City(**arguments)


@dataclasses.dataclass
class Deps:
    prefix: str


@tool
def greet(name: str, ctx: ToolContext[Deps]) -> str:
    """Greet someone."""
    return f"{ctx.deps.prefix} {name}"


async def test_deps_reach_tools_through_the_context() -> None:
    script = [Reply(tool_calls=[call("greet", {"name": "Ada"})]), Reply("done")]
    with FakeModelServer(script) as server:
        agent: Agent[Deps, str] = Agent("fake-model", base_url=server.base_url, api_key="k",
                                        tools=[greet])
        result = await agent.run("x", deps=Deps(prefix="Hello"))
    assert result.output == "done"
    tool_message = server.model_requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "Hello Ada"


async def test_raise_on_error_raises_the_provider_error() -> None:
    with FakeModelServer([Fault.status(401), Fault.status(401)]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k")
        result = await agent.run("x", raise_on_error=False)
        assert result.stop_reason == "error" and result.output == ""
        with pytest.raises(AuthError):
            await agent.run("x")  # the default


def test_a_typeddict_from_typing_is_a_clear_error_on_old_pythons() -> None:
    import sys
    import typing

    class Old(typing.TypedDict):
        a: int

    if sys.version_info >= (3, 12):
        assert Agent("m", output_type=Old)._output is not None
        return
    with pytest.raises(ConfigError, match=r"typing_extensions\.TypedDict"):
        Agent("m", output_type=Old)


class Connection:
    """Not a type pydantic can validate or describe."""


def test_an_unusable_output_type_says_what_to_give_not_a_model_config_to_set() -> None:
    """The error repeated pydantic's "Set `arbitrary_types_allowed=True` in the model_config",
    a config the user has no way to set on an `output_type`."""
    for unusable in (Connection, list[Connection]):
        with pytest.raises(ConfigError) as raised:
            Agent("m", output_type=unusable)
        message = str(raised.value)
        assert "arbitrary_types_allowed" not in message and "model_config" not in message
        assert "Unable to generate pydantic-core schema for" in message
        assert message.endswith("give a pydantic model, a TypedDict or a dataclass whose fields "
                                "are JSON types (str, int, float, bool, None, lists and dicts of "
                                "them, or other such models), or one of those types alone")


def test_a_type_validated_but_without_a_json_schema_says_the_same() -> None:
    from collections.abc import Callable

    with pytest.raises(ConfigError, match=r"cannot be used \(Cannot generate a JsonSchema .*\): "
                       "give a pydantic model"):
        Agent("m", output_type=Callable[[int], int])


async def test_native_mode_streams_partial_output_from_the_reply_text() -> None:
    text = '{"name": "Montevideo", "population": 1300000}'
    with FakeModelServer([Reply(text, chunk_size=6)]) as server:
        agent = agent_for(server, City, output_mode="native")
        events = [e async for e in agent.stream("x")]
    partial = [e.output for e in events if isinstance(e, PartialOutput)]
    assert all(isinstance(p, City) for p in partial)
    assert partial[-1] == City(name="Montevideo", population=1300000)
    assert events[-1].type == "done"
    assert events[-1].result.output == City(name="Montevideo", population=1300000)


async def test_streaming_a_list_yields_validated_lists_that_grow() -> None:
    cities = [{"name": "Lima", "population": 10}, {"name": "Quito", "population": 3}]
    script = [Reply(tool_calls=[call("final_result", {"response": cities})], chunk_size=4)]
    with FakeModelServer(script) as server:
        events = [e async for e in agent_for(server, list[City]).stream("x")]
    partial = [e.output for e in events if isinstance(e, PartialOutput)]
    assert all(isinstance(p, list) and all(isinstance(c, City) for c in p) for p in partial)
    assert [len(p) for p in partial] == sorted(len(p) for p in partial)  # only ever grows
    assert partial[-1] == [City(**c) for c in cities]


async def test_no_partial_output_before_the_required_fields_arrive() -> None:
    script = [Reply(tool_calls=[call("final_result", {"name": "Bern", "population": 1})],
                    chunk_size=3)]
    with FakeModelServer(script) as server:
        events = [e async for e in agent_for(server, City).stream("x")]
    partial = [e for e in events if isinstance(e, PartialOutput)]
    assert partial and all(p.data.get("population") is not None for p in partial)


def test_the_json_form_of_a_partial_output_is_its_json() -> None:
    from loopwright.events import event_from_dict, event_to_json

    event = PartialOutput(output=City(name="Bern", population=1),
                          data={"name": "Bern", "population": 1})
    line = json.loads(event_to_json(event))
    assert line == {"type": "partial_output", "output": {"name": "Bern", "population": 1}}
    assert event_from_dict(line).output == {"name": "Bern", "population": 1}
