"""A locked or failing SQLite store (issue 13 item 2): waited out, never skipped, never blocking
the event loop; a store that truly fails stops the run with a named reason."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

from loopwright import Agent, Tool, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, ScriptItem, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


class WriteLock:
    """Another process's write lock on the database, held in a thread until `release()` or
    `hold` seconds."""

    def __init__(self, db: Path, hold: float) -> None:
        self.db, self.hold = db, hold
        self.taken, self.released, self._stop = threading.Event(), threading.Event(), \
            threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> WriteLock:
        self._thread.start()
        assert self.taken.wait(10)
        return self

    def release(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        holder = sqlite3.connect(self.db, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")
        self.taken.set()
        self._stop.wait(self.hold)
        holder.execute("ROLLBACK")
        holder.close()
        self.released.set()


def statuses(into: list[str]) -> Any:
    return lambda e: into.append(e.kind) if e.type == "status" else None


def locking_step(db: Path, hold: float, locks: list[WriteLock]) -> Tool:
    @tool(read_only=True)
    def step(n: int) -> str:
        """One step of the job."""
        if n == 1:  # mid-run, another process takes the database for `hold` seconds
            locks.append(WriteLock(db, hold).start())
        return f"step {n} done"

    return step


async def test_an_8s_write_lock_mid_run_is_waited_out_and_every_message_is_stored(
        tmp_path: Path) -> None:
    """Issue 13 replay: with an 8 s lock mid-run only 3 of 18 messages used to be stored."""
    db = tmp_path / "s.db"
    locks: list[WriteLock] = []
    seen: list[str] = []
    script = [Reply(tool_calls=[call("step", {"n": n})]) for n in range(8)] + [Reply("all done")]
    with FakeModelServer(script) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST, store=db,
                             tools=[locking_step(db, 8.0, locks)], session_id="job",
                             callbacks=[statuses(seen)]).run("Do the eight steps.")
    assert result.stop_reason == "completed" and locks and locks[0].released.is_set()
    with SQLiteStore(db) as store:
        stored = store.load("job")
        info = store.get("job")
    assert len(stored) == 18
    assert [(m.role, m.content, m.tool_call_id) for m in stored] == [
        (m.role, m.content, m.tool_call_id) for m in result.messages[1:]]
    assert "store_busy" in seen and "store_error" not in seen
    assert info is not None and info.stop_reason == "completed"


async def test_an_unrelated_run_goes_on_while_another_agents_store_is_locked(
        tmp_path: Path) -> None:
    db = tmp_path / "locked.db"
    SQLiteStore(db).close()
    lock = WriteLock(db, hold=10.0).start()  # released once the unrelated run is done
    with FakeModelServer(handler=lambda request: Reply("fine")) as server:
        def agent(**kwargs: Any) -> Agent:
            return Agent("m", base_url=server.base_url, api_key="k", retry=FAST, **kwargs)

        # a long busy timeout: a store call made on the event loop would hold it all along
        locked_run = asyncio.ensure_future(
            agent(store=SQLiteStore(db, timeout=30)).run("stuck behind the lock"))
        await asyncio.sleep(0.2)
        unrelated = await agent().run("an unrelated question")
        still_locked = not lock.released.is_set()
        lock.release()
        stored_run = await locked_run
    assert unrelated.output == "fine"
    assert still_locked, "the unrelated run had to wait for the other agent's database"
    assert stored_run.output == "fine"
    with SQLiteStore(db) as store:
        assert [m.content for m in store.load(stored_run.session_id or "")] == [
            "stuck behind the lock", "fine"]


async def test_a_store_that_truly_fails_stops_the_run_and_keeps_what_it_wrote(
        tmp_path: Path) -> None:
    db = tmp_path / "s.db"

    @tool  # may change something: its call is durable before it runs
    def step(n: int) -> str:
        """One step of the job."""
        if n == 1:  # the database starts refusing every new message (say, a full disk)
            with sqlite3.connect(db) as other:
                other.execute("CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN "
                              "SELECT RAISE(FAIL, 'database or disk is full'); END")
        return f"step {n} done"

    events: list[Event] = []
    # the run stops at the failure: what a working store would have been asked next is not here
    script = [Reply(tool_calls=[call("step", {"n": n})]) for n in range(2)]
    with FakeModelServer(script) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST, store=db,
                             tools=[step], session_id="job",
                             callbacks=[events.append]).run("Do the steps.", raise_on_error=False)
        requests = len(server.model_requests)
    assert result.stop_reason == "error"
    assert result.error is not None and "session store failed" in result.error
    assert "disk is full" in result.error
    assert requests == 2  # no request went out after the failed write
    with SQLiteStore(db) as store:
        stored = store.load("job")
    # everything written before the failure is still there (the call to step 1 was durable
    # before step 1 ran), a clean prefix of the run
    assert [m.content for m in stored] == [m.content for m in result.messages[1:5]]
    assert [e.kind for e in events if e.type == "status"].count("store_error") == 1


async def test_a_run_started_while_its_store_is_locked_waits_for_it(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SQLiteStore(db).close()
    seen: list[str] = []
    lock = WriteLock(db, hold=1.5).start()  # longer than the store's own busy timeout
    with FakeModelServer([Reply("fine")]) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                             store=SQLiteStore(db, timeout=0.1), session_id="late",
                             callbacks=[statuses(seen)]).run("hello")
    assert lock.released.is_set() and result.output == "fine"
    assert "store_busy" in seen
    with SQLiteStore(db) as store:
        assert [m.content for m in store.load("late")] == ["hello", "fine"]


async def test_a_tool_call_is_durable_before_the_tool_runs(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    seen_by_tool: list[list[str]] = []

    @tool  # not read-only: it may change something, so its call is stored before it runs
    async def check() -> str:
        """Look at the session database."""
        with sqlite3.connect(db) as reader:
            rows = reader.execute("SELECT role FROM messages ORDER BY seq").fetchall()
        seen_by_tool.append([r[0] for r in rows])
        return "checked"

    locks: list[WriteLock] = []

    def answer(request: RecordedRequest) -> ScriptItem:
        if locks:
            return Reply("done")
        # the database is busy for a moment just as the call is about to be written
        locks.append(WriteLock(db, hold=1.0).start())
        return Reply(tool_calls=[call("check", {})])

    with FakeModelServer(handler=answer) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k", retry=FAST, store=db,
                             tools=[check]).run("check it")
    assert result.output == "done"
    assert seen_by_tool == [["user", "assistant"]]  # its own call was already stored
    assert locks[0].released.is_set()
