"""Compaction moves a stored run to a new session that points at its parent (DESIGN §7, §8)."""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent, tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.endpoints.retry import RetryPolicy
from loopwright.messages import Usage
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call

TASK = "Collect every part and report how many there were."


@tool(read_only=True)
def dump(part: int) -> str:
    """Return a long chunk of data for one part."""
    return "".join(f"part {part} row {n}: {'x' * 40}\n" for n in range(60))


def handler() -> object:
    queue = [Reply(tool_calls=[call("dump", {"part": n})]) for n in range(12)]

    def answer(request: RecordedRequest) -> ScriptItem:
        if request.body["messages"][0]["content"] == SUMMARY_SYSTEM:
            return Reply("## Goal\nCollect the parts.\n## Done\nSome parts.")
        return queue.pop(0) if queue else Reply("12 parts")

    return answer


async def test_a_compacted_run_continues_in_a_child_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeModelServer(handler=handler()) as server:  # type: ignore[arg-type]
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[dump],
                      retry=RetryPolicy(base_delay=0.01, jitter=0), context_window=4096,
                      cache_dir=str(tmp_path), workdir=str(tmp_path), store=db,
                      session_id="root")
        result = await agent.run(TASK)
    assert result.stop_reason == "completed" and result.session_id != "root"
    with SQLiteStore(db) as store:
        chain = [store.get(result.session_id or "")]
        while chain[-1] is not None and chain[-1].parent_id:
            chain.append(store.get(chain[-1].parent_id))
        assert chain[-1] is not None and chain[-1].id == "root"
        assert all(info is not None for info in chain)
        infos = [info for info in chain if info is not None]
        assert infos[0].stop_reason == "completed"
        assert {info.stop_reason for info in infos[1:]} == {"compacted"}
        root = store.load("root")
        assert root[0].content == TASK and len(root) > len(store.load(infos[0].id))
        latest = store.load(infos[0].id)  # resumable from where the run got to
        shape = [(m.role, m.tool_call_id, [c.id for c in m.tool_calls]) for m in latest]
        assert shape == [(m.role, m.tool_call_id, [c.id for c in m.tool_calls])
                         for m in result.messages[1:]]  # pruning stubs stay in memory only
        total = Usage()
        for info in infos:
            total.add(info.usage)
        assert total == result.usage  # every token counted once across the lineage
