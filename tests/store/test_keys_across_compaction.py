"""A call cut off by a crash keeps its idempotency key when the model makes it again, even when
the resumed run compacts the history first and the cut call is among what the summary replaces
(a resume with a new prompt, and a call whose arguments are longer than the tail kept)."""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent, ToolContext, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.idempotency import IdempotencyKeys

FILLER = " ".join(["thinking"] * 400)
ARGUMENTS = {"name": "a", "notes": "n" * 12_000}  # longer than the tail the compaction keeps


def crashed_session(db: Path, cut: ToolCall) -> None:
    history = [Message(role="user", content="Record step a.")]
    for n in range(6):
        history += [Message(role="assistant", content=f"{n} {FILLER}"),
                    Message(role="user", content=f"More {n}.")]
    history.append(Message(role="assistant", tool_calls=[cut]))
    with SQLiteStore(db) as store:
        store.create("s")
        store.append_many("s", history)


async def test_a_cut_call_summarised_away_keeps_its_key(tmp_path: Path) -> None:
    import json

    keys: list[str] = []

    @tool
    async def record_step(name: str, notes: str, ctx: ToolContext) -> str:
        """Record a step (a side effect, once per idempotency key)."""
        keys.append(ctx.idempotency_key)
        return f"recorded {name}"

    cut = ToolCall(id="cut1", name="record_step", arguments=json.dumps(ARGUMENTS))
    crashed_session(tmp_path / "s.db", cut)
    script = [Reply("Summary: step a was being recorded when the run stopped."),
              Reply(tool_calls=[call("record_step", ARGUMENTS)]), Reply("Done.")]
    with FakeModelServer(script) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k",
                      store=tmp_path / "s.db", session_id="s", tools=[record_step],
                      context_window=8_000, retry=RetryPolicy(base_delay=0.01, jitter=0))
        result = await agent.run("Go on.")
    assert result.output == "Done."
    with SQLiteStore(tmp_path / "s.db") as store:
        assert store.get("s").epoch == 1  # compacted before the call was made again
    expected = IdempotencyKeys("s").key_for(cut, [Message(role="assistant", tool_calls=[cut])])
    assert keys == [expected]
