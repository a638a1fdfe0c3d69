"""Per-message caches (wire forms, their JSON, the text joined for the previous turn, token
estimates) never send or count a stale form: an edited message empties its cache, an edited or
compacted history does not reuse the joined text of the old one."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.context.tokens import TokenCounter, estimate_request
from loopwright.endpoints.retry import RetryPolicy
from loopwright.messages import (
    Message,
    ModelRequest,
    Sanitizer,
    ToolCall,
    assistant,
    system,
    tool_result,
    user,
)
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.wire import get_wire_format
from shared_helpers import cyclic_garbage

MODES = ["chat_completions", "responses", "anthropic_messages"]


def history(rounds: int) -> list[Message]:
    out = [system("Be brief."), user("Look the keys up.")]
    for n in range(rounds):
        found = ToolCall(id=f"call_{n}", name="lookup", arguments=json.dumps({"key": f"k{n}"}))
        out += [assistant(f"step {n}", [found]), tool_result(found, f"value {n}")]
    return out


def fresh_copy(messages: list[Message]) -> list[Message]:
    """The same messages rebuilt from their plain fields: nothing cached on them."""
    return [Message.from_dict(m.to_dict()) for m in messages]


def sent(mode: str, messages: list[Message]) -> Any:
    """What the adapter would send for `messages`, as parsed JSON."""
    wire = get_wire_format(mode)
    return json.loads(wire.encode_body(ModelRequest(model="m", messages=messages), stream=True))


def uncached(mode: str, messages: list[Message]) -> Any:
    return sent(mode, fresh_copy(messages))


@pytest.mark.parametrize("mode", MODES)
def test_the_spliced_body_is_the_built_body_turn_after_turn(mode: str) -> None:
    wire = get_wire_format(mode)
    full = history(12)
    sanitizer = Sanitizer()
    for end in range(2, len(full) + 1):
        request = ModelRequest(model="m", messages=sanitizer(full[:end]))
        encoded = json.loads(wire.encode_body(request, stream=True))
        assert encoded == wire.build_body(request, stream=True), end
        assert encoded == uncached(mode, request.messages), end


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("edit", ["content", "tool_calls", "reasoning", "provider_data"])
def test_a_message_edited_in_place_is_sent_as_edited(mode: str, edit: str) -> None:
    messages = history(6)
    sent(mode, messages)
    sent(mode, messages)  # per-message JSON and the joined text are both cached now
    target = messages[4]  # an assistant message well inside the joined prefix
    if edit == "content":
        target.content = "EDITED"
    elif edit == "tool_calls":
        target.tool_calls = [dataclasses.replace(target.tool_calls[0], name="EDITED")]
    elif edit == "reasoning":
        target.reasoning = "EDITED"
    else:
        target.provider_data = {mode: {"output": [], "content": []}}
    assert sent(mode, messages) == uncached(mode, messages)
    if edit in ("content", "tool_calls"):
        assert "EDITED" in json.dumps(sent(mode, messages))


@pytest.mark.parametrize("mode", MODES)
def test_a_compacted_history_does_not_reuse_the_old_text(mode: str) -> None:
    messages = history(8)
    sent(mode, messages)
    sent(mode, messages)
    compacted = [*messages[:2], user("Summary: eight keys were looked up."), *messages[-4:]]
    assert sent(mode, compacted) == uncached(mode, compacted)
    # the same length as before, every message but one the same object
    sent(mode, messages)
    swapped = [*messages[:3], user("a different message"), *messages[4:]]
    assert sent(mode, swapped) == uncached(mode, swapped)
    assert "a different message" in json.dumps(sent(mode, swapped))


def test_tool_calls_are_frozen() -> None:
    found = ToolCall(id="c1", name="lookup", arguments="{}")
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.arguments = '{"key": "k"}'  # type: ignore[misc]


def test_token_estimates_follow_edits_and_new_histories() -> None:
    counter = TokenCounter()
    messages = history(10)
    request = ModelRequest(model="m", messages=messages)
    assert counter.estimate(request) == estimate_request(request)
    messages[3].content = "x" * 4000  # edited in place after its estimate was cached
    assert counter.estimate(request) == estimate_request(ModelRequest(
        model="m", messages=fresh_copy(messages)))
    grown = ModelRequest(model="m", messages=[*messages, user("more " * 50)])
    assert counter.estimate(grown) == estimate_request(grown)
    shorter = ModelRequest(model="m", messages=[messages[0], user("y" * 800)])
    assert counter.estimate(shorter) == estimate_request(shorter)


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.mark.parametrize("mode", MODES)
async def test_a_hook_editing_an_earlier_message_reaches_the_server(mode: str) -> None:
    def edit_first_result(request: ModelRequest) -> None:
        results = [m for m in request.messages if m.role == "tool"]
        if len(results) == 2:  # the first result was sent (and cached) on the previous turn
            results[0].content = "EDITED BY HOOK"

    replies = [Reply(tool_calls=[call("lookup", {"key": "a"})]),
               Reply(tool_calls=[call("lookup", {"key": "b"})]), Reply(text="done")]
    with FakeModelServer(replies=replies) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", api_mode=mode,
                      tools=[lookup], retry=RetryPolicy(base_delay=0.01, jitter=0),
                      hooks={"before_model": [edit_first_result]})
        result = await agent.run("go")
    assert result.output == "done"
    second, third = (json.dumps(r.body) for r in server.model_requests[1:3])
    assert "value of a" in second
    assert "EDITED BY HOOK" in third and "value of a" not in third


@pytest.mark.parametrize("mode", MODES)
def test_the_tools_json_is_written_once_and_never_sent_stale(mode: str) -> None:
    from loopwright.messages import ToolSpec

    wire = get_wire_format(mode)
    schema = {"type": "object", "properties": {"key": {"type": "string"}}}
    spec = ToolSpec(name="lookup", description="Look a key up.", parameters=schema)
    messages = history(3)

    def tools_sent(specs: list[ToolSpec], upto: int) -> Any:
        request = ModelRequest(model="m", messages=messages[:upto], tools=specs)
        encoded = json.loads(wire.encode_body(request, stream=False))
        assert encoded == wire.build_body(request, stream=False)
        return encoded["tools"]

    first = tools_sent([spec], 4)
    assert tools_sent([spec], 6) == first  # the same specs: the same JSON, reused
    renamed = dataclasses.replace(spec, description="Find a key.")
    assert "Find a key." in json.dumps(tools_sent([renamed], 6))
    wider = dataclasses.replace(spec, parameters={**schema, "required": ["key"]})
    assert "required" in json.dumps(tools_sent([wider], 6))
    two = tools_sent([spec, renamed], 6)
    assert [t.get("name") or t["function"]["name"] for t in two] == ["lookup", "lookup"]
    assert tools_sent([spec], 6) == first


@pytest.mark.parametrize("mode", MODES)
def test_an_edited_system_prompt_is_sent_as_edited(mode: str) -> None:
    messages = history(3)
    sent(mode, messages)
    sent(mode, messages)
    messages[0].content = "Be thorough."
    assert sent(mode, messages) == uncached(mode, messages)
    assert "Be thorough." in json.dumps(sent(mode, messages))
    messages[0] = system("Be kind.")  # a new message, not an edit
    assert "Be kind." in json.dumps(sent(mode, messages))


@pytest.mark.parametrize("mode", MODES)
def test_a_history_sent_turn_after_turn_is_freed_without_the_collector(mode: str) -> None:
    """The text joined for the next turn was kept on the last message it covers, with a list
    of the messages it covers, that message among them: a reference cycle that left the
    whole history to the garbage collector (whose collections are CPU every turn)."""
    wire = get_wire_format(mode)
    full = history(6)
    sanitizer = Sanitizer()
    with cyclic_garbage(Message) as left:
        for end in range(2, len(full) + 1):
            wire.encode_body(ModelRequest(model="m", messages=sanitizer(full[:end])), stream=False)
        assert any("joined" in key for m in full for key in m.wire_cache)  # one is kept
        del full, sanitizer
    assert left == []
