"""A server that gives every turn's call the same id (`call_0`: some local servers, and any that
sends none) must not make two different calls one: each gets its own idempotency key, or a
key-aware tool skips the second call's real effect."""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent, ToolContext, tool
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call


def charging(ledger: dict[str, int]) -> object:
    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card (a side effect), once per idempotency key."""
        if ctx.idempotency_key in ledger:
            return "already charged"
        ledger[ctx.idempotency_key] = amount
        return f"charged {amount}"

    return charge


async def test_two_calls_with_one_id_in_two_turns_get_two_keys(tmp_path: Path) -> None:
    ledger: dict[str, int] = {}
    script = [Reply(tool_calls=[call("charge", {"amount": 5}, id="call_0")]),
              Reply(tool_calls=[call("charge", {"amount": 7}, id="call_0")]),
              Reply(tool_calls=[call("charge", {"amount": 7}, id="call_0")]), Reply("Done.")]
    with FakeModelServer(script) as server:
        result = await Agent("test-model", base_url=server.base_url, api_key="k",
                             store=tmp_path / "s.db", session_id="s",
                             tools=[charging(ledger)]).run("Charge 5, 7, and 7 again.")
    assert [m.content for m in result.messages if m.role == "tool"] == [
        "charged 5", "charged 7", "charged 7"]
    assert sorted(ledger.values()) == [5, 7, 7]


async def test_a_cut_call_with_a_reused_id_keeps_its_key_on_resume(tmp_path: Path) -> None:
    """Where inheritance must still fire: the cut call is the second to use its id."""
    first = ToolCall(id="call_0", name="charge", arguments='{"amount": 5}')
    cut = ToolCall(id="call_0", name="charge", arguments='{"amount": 7}')
    history = [Message(role="user", content="Charge 5 then 7."),
               Message(role="assistant", tool_calls=[first]),
               Message(role="tool", content="charged 5", tool_call_id="call_0", name="charge"),
               Message(role="assistant", tool_calls=[cut])]
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s")
        store.append_many("s", history)
    ledger: dict[str, int] = {}
    script = [Reply(tool_calls=[call("charge", {"amount": 7}, id="call_0")]), Reply("Done.")]
    with FakeModelServer(script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k",
                      store=tmp_path / "s.db", session_id="s", tools=[charging(ledger)])
        await agent.run("")
    from loopwright.tools.idempotency import IdempotencyKeys

    keys = IdempotencyKeys("s")
    assert keys.key_for(first, history[:2]) != keys.key_for(cut, history)
    assert list(ledger) == [keys.key_for(cut, history)]  # the cut call's key, inherited
