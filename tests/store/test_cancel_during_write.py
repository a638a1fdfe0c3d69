"""A cancel that lands while a store write is in flight does not lose the write.

Seen in CI (tests/acp/test_acp_agent.py): an editor cancelled a turn the moment it was told of
a `bash` call. The call's message was being made durable before the command ran, but the store's
thread was busy, so the write still waited in its queue; the cancel abandoned it, and the session
was left with the cancelled call's result and no call. `session/load` then showed three tool
calls, not four, and the model's next request lacked the call.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from pathlib import Path

from loopwright import Agent, tool
from loopwright.messages import Message
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import ThreadedStore
from loopwright.store.writes import AppendMessages, StoreWrite
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.worker_threads import Job


@tool
def slow_command(command: str) -> str:
    """Run a shell command (takes a while)."""
    time.sleep(30)
    return "done"


def _calls(writes: Sequence[StoreWrite]) -> list[str]:
    return [c.name for w in writes if isinstance(w, AppendMessages)
            for m in w.messages for c in m.tool_calls]


class BusyThreadStore(ThreadedStore):
    """A real SQLite store on its own thread, whose thread is held by another session's commit
    (0.5 s) just as the call's write is handed to it (as under `serve`, where runs share it)."""

    def __init__(self, path: Path) -> None:
        super().__init__(SQLiteStore(path))
        self.queued = asyncio.Event()
        self.holds: list[asyncio.Future[None]] = []

    def start_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> asyncio.Future[None]:
        """(How the recorder writes to this store.) The hold reaches the thread first."""
        if "slow_command" in _calls(writes) and not self.holds:
            loop = asyncio.get_running_loop()
            self.holds.append(loop.create_future())
            self._jobs.put(Job(functools.partial(time.sleep, 0.5), loop, self.holds[0]))
            self.queued.set()
        return super().start_batch(session_id, writes)


class SlowAsyncStore(ThreadedStore):
    """A store whose write awaits (as PostgreSQL's, or one a user wrote against
    `SessionStore`): the recorder writes through `write_batch`, in a task of its own; the call's
    write takes 0.3 s, inside which the run is cancelled."""

    start_batch = None  # type: ignore[assignment]  # the path of every store but SQLite's

    def __init__(self, path: Path) -> None:
        super().__init__(SQLiteStore(path))
        self.writing = asyncio.Event()

    async def write_batch(self, session_id: str, writes: Sequence[StoreWrite]) -> None:
        if "slow_command" in _calls(writes) and not self.writing.is_set():
            self.writing.set()
            await asyncio.sleep(0.3)
        await super().write_batch(session_id, writes)


def _consistent(history: list[Message]) -> bool:
    """Every tool result answers a call made before it."""
    made: set[str] = set()
    for message in history:
        made.update(c.id for c in message.tool_calls)
        if message.role == "tool" and message.tool_call_id not in made:
            return False
    return True


async def _cancelled_when(reached: asyncio.Event, store: ThreadedStore,
                          server: FakeModelServer) -> tuple[Agent, list[Message]]:
    """Session s1's run of the `slow_command` call, cancelled once `reached` is set (the call's
    write is under way); the agent, and the session as stored once the run has ended."""
    agent = Agent("test-model", base_url=server.base_url, api_key="k", store=store,
                  session_id="s1", tools=[slow_command])
    handle = await agent.start("Wait a while")
    await asyncio.wait_for(reached.wait(), 20)
    handle.cancel()
    result = await asyncio.wait_for(handle.task, 20)
    assert result.stop_reason == "cancelled"
    return agent, await store.load("s1")


async def test_a_cancel_while_the_calls_write_waits_keeps_the_call(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("slow_command", {"command": "sleep 30"})]),
              Reply("Still here after the cancel.")]
    with FakeModelServer(script) as server:
        store = BusyThreadStore(tmp_path / "s.db")
        agent, stored = await _cancelled_when(store.queued, store, server)
        await asyncio.gather(*store.holds)  # done before the load: the thread runs in order
        assert [c.name for m in stored for c in m.tool_calls] == ["slow_command"]
        assert _consistent(stored)
        assert stored[-1].role == "tool"  # the cancelled call's result, after its call

        again = await agent.run("Are you there?")
        assert again.output == "Still here after the cancel."
        sent = server.model_requests[-1].body["messages"]
        assert any("sleep 30" in str(m) for m in sent)
        await agent.aclose()
        await store.aclose()


async def test_a_cancel_inside_an_awaited_write_keeps_the_call(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("slow_command", {"command": "sleep 30"})])]
    with FakeModelServer(script) as server:
        store = SlowAsyncStore(tmp_path / "s.db")
        agent, stored = await _cancelled_when(store.writing, store, server)
        assert [c.name for m in stored for c in m.tool_calls] == ["slow_command"]
        assert _consistent(stored)
        await agent.aclose()
        await store.aclose()
