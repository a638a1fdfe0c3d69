"""A call cut off by a crash keeps its idempotency key when its history moves to another session
(passed on with `history=`, loaded from the store, exported by `loopwright sessions export` and
read back): a key-aware tool called again there recognises it. Calls made anew in two sessions
that start from one history never share a key, and a note forged in a history hands a key on
to no call but the one it was made for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loopwright import Agent, ToolContext, tool
from loopwright.interrupted import INTERRUPTED_RESULT, is_interrupted_result
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.idempotency import IdempotencyKeys

CUT = ToolCall(id="c1", name="charge", arguments='{"amount": 7}')


def charging(ledger: dict[str, int], keys: list[str]) -> object:
    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card (a side effect), once per idempotency key."""
        keys.append(ctx.idempotency_key)
        if ctx.idempotency_key in ledger:
            return "already charged"
        ledger[ctx.idempotency_key] = amount
        return f"charged {amount}"

    return charge


def agent(server: FakeModelServer, db: Path, session_id: str, tools: list[object]) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                 session_id=session_id, tools=tools)


async def crashed_and_resumed(db: Path, ledger: dict[str, int]) -> list[Message]:
    """Session s1: the charge of 7 took effect (its key in the ledger), then a crash cut the call
    off; a run resumes s1 and answers without calling again. Its messages."""
    with SQLiteStore(db) as store:
        store.create("s1")
        store.append_many("s1", [Message(role="user", content="Charge 7."),
                                 Message(role="assistant", tool_calls=[CUT])])
    ledger[first_key("s1")] = 7  # what the tool recorded in s1 before the crash
    with FakeModelServer([Reply("It may have gone through.")]) as server:
        result = await agent(server, db, "s1", [charging(ledger, [])]).run("")
    return result.messages


def first_key(session_id: str) -> str:
    """The key the cut call had when it ran in `session_id`."""
    return IdempotencyKeys(session_id).key_for(CUT, [Message(role="assistant", tool_calls=[CUT])])


async def run_in(db: Path, session_id: str, history: list[Message], ledger: dict[str, int],
                 amount: int = 7, call_id: str | None = None) -> tuple[list[str], list[str]]:
    """A run in `session_id` from `history` whose model charges `amount`: the keys the tool saw
    and what it answered."""
    keys: list[str] = []
    script = [Reply(tool_calls=[call("charge", {"amount": amount}, id=call_id)]), Reply("Done.")]
    with FakeModelServer(script) as server:
        result = await agent(server, db, session_id, [charging(ledger, keys)]).run(
            "Charge it if it did not go through.", history=history)
    return keys, [m.content for m in result.messages if m.role == "tool"]


async def test_a_resumed_runs_messages_passed_to_another_session_keep_the_cut_calls_key(
        tmp_path: Path) -> None:
    ledger: dict[str, int] = {}
    history = await crashed_and_resumed(tmp_path / "s.db", ledger)
    keys, results = await run_in(tmp_path / "s.db", "s2", history, ledger)
    assert keys == [first_key("s1")]
    assert results[-1] == "already charged" and list(ledger.values()) == [7]


async def test_a_history_exported_and_read_back_keeps_the_cut_calls_key(tmp_path: Path) -> None:
    ledger: dict[str, int] = {}
    await crashed_and_resumed(tmp_path / "s.db", ledger)
    history = export(tmp_path / "s.db", "s1")
    assert any(is_interrupted_result(m) for m in history)
    with SQLiteStore(tmp_path / "other.db") as store:  # another database altogether
        store.create("s2")
    keys, results = await run_in(tmp_path / "other.db", "s2", history, ledger)
    assert keys == [first_key("s1")] and results[-1] == "already charged"


async def test_two_sessions_from_one_history_key_their_new_calls_apart(tmp_path: Path) -> None:
    """Where the key must not follow: one template, two users, the same call made anew in each
    (and the server giving it the id the template's call had)."""
    ledger: dict[str, int] = {}
    history = await crashed_and_resumed(tmp_path / "s.db", ledger)
    template = [*history, Message(role="user", content="Charge 5 too."),
                Message(role="assistant", tool_calls=[ToolCall(id="c1", name="charge",
                                                               arguments='{"amount": 5}')]),
                Message(role="tool", content="charged 5", tool_call_id="c1", name="charge")]
    first, _ = await run_in(tmp_path / "s.db", "user-a", template, ledger, 9, "c1")
    second, results = await run_in(tmp_path / "s.db", "user-b", template, ledger, 9, "c1")
    assert first != second and results[-1] == "charged 9"
    assert sorted(ledger.values()) == [7, 9, 9]


async def test_a_note_forged_onto_other_arguments_hands_on_no_key(tmp_path: Path) -> None:
    """A history whose cut call was edited (the amount) under a note with s1's real mark: the
    call made again is another call, so the tool charges it."""
    ledger: dict[str, int] = {}
    history = await crashed_and_resumed(tmp_path / "s.db", ledger)
    forged = [Message(role="assistant", tool_calls=[ToolCall(
        id="c1", name="charge", arguments='{"amount": 700}')]) if m.tool_calls else m
              for m in history]
    keys, results = await run_in(tmp_path / "s.db", "s2", forged, ledger, amount=700)
    assert keys != [first_key("s1")] and results[-1] == "charged 700"
    assert sorted(ledger.values()) == [7, 700]


def export(db: Path, session_id: str) -> list[Message]:
    exported = subprocess.run(
        [sys.executable, "-m", "loopwright", "sessions", "export", session_id, "--db", str(db)],
        capture_output=True, text=True, check=True).stdout
    return [Message.from_dict(json.loads(line)) for line in exported.splitlines()]


async def test_a_crashed_session_exported_before_any_resume_keeps_the_cut_calls_key(
        tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s1")
        store.append_many("s1", [Message(role="user", content="Charge 7."),
                                 Message(role="assistant", tool_calls=[CUT])])
    ledger = {first_key("s1"): 7}
    history = export(tmp_path / "s.db", "s1")
    assert [m.content for m in history if is_interrupted_result(m)] == [INTERRUPTED_RESULT]
    keys, results = await run_in(tmp_path / "s.db", "s2", history, ledger)
    assert keys == [first_key("s1")] and results[-1] == "already charged"


def test_a_running_sessions_export_leaves_its_calls_as_they_are(tmp_path: Path) -> None:
    """Where no note may be given: a run holds the session, so its call is running, not cut."""
    with SQLiteStore(tmp_path / "s.db") as store:
        store.create("s1")
        store.append_many("s1", [Message(role="user", content="Charge 7."),
                                 Message(role="assistant", tool_calls=[CUT])])
        store.acquire("s1", "a run of this process")
    history = export(tmp_path / "s.db", "s1")
    assert [m.role for m in history] == ["user", "assistant"]
