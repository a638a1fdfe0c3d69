"""What the guide says of conversations: each call is one of its own; `history=` or a session
goes on with one. (The guide's first example asked "And 4+5?" after "What is 2+3?", as if the
second call saw the first.)"""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent
from loopwright.testing import FakeModelServer, Reply


def roles(server: FakeModelServer) -> list[list[str]]:
    return [[m["role"] for m in r.body["messages"]] for r in server.model_requests]


async def test_each_call_is_a_conversation_of_its_own() -> None:
    with FakeModelServer([Reply("Hello Ada."), Reply("?"), Reply("?")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k")
        await agent.run("My name is Ada.")
        async for _ in agent.stream("What is my name?"):
            pass
        agent.chat("What is my name?")
    assert roles(server) == [["system", "user"]] * 3


async def test_history_goes_on_with_a_conversation() -> None:
    with FakeModelServer([Reply("Hello Ada."), Reply("Ada.")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k")
        first = await agent.run("My name is Ada.")
        await agent.run("What is my name?", history=first.messages)
    assert roles(server)[1] == ["system", "user", "assistant", "user"]


def test_a_session_goes_on_with_a_conversation_chat_included(tmp_path: Path) -> None:
    with FakeModelServer([Reply("Hello Ada."), Reply("Ada.")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k",
                      store=str(tmp_path / "sessions.db"), session_id="ada")
        agent.chat("My name is Ada.")
        assert agent.chat("What is my name?") == "Ada."
    assert roles(server)[1] == ["system", "user", "assistant", "user"]
