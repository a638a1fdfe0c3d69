"""An effect record speaks for the call that made it, not for every call with its id: a server
that gives every call the same id (`call_0`: some local servers, and any that sends none) must
not make a resumed run tell the model that a cut-off call took effect because an earlier call
with that id wrote a file."""

from __future__ import annotations

from pathlib import Path

from store_helpers import note_on_resume

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.messages import Message, ToolCall
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call


async def wrote_notes(tmp_path: Path, work: Path) -> None:
    """Session s: a run writes notes.txt with a call whose id is call_0 (its effect recorded)."""
    write = call("write_file", {"path": "notes.txt", "content": "new\n"}, id="call_0")
    with FakeModelServer([Reply(tool_calls=[write]), Reply("Written.")]) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k",
                      store=tmp_path / "s.db", session_id="s", workdir=str(work),
                      tools=default_tools(names=["write_file"]))
        await agent.run("Write the notes.")
    assert (work / "notes.txt").read_text() == "new\n"


def cut_off(tmp_path: Path, cut: ToolCall) -> None:
    """What a crash leaves of a later turn: its reply, stored before the call ran."""
    with SQLiteStore(tmp_path / "s.db") as store:
        store.append_many("s", [Message(role="user", content="Now the next step."),
                                Message(role="assistant", tool_calls=[cut])])


async def test_a_cut_call_reusing_an_id_is_not_reported_by_the_earlier_calls_record(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    await wrote_notes(tmp_path, work)
    cut_off(tmp_path, ToolCall(id="call_0", name="bash", arguments='{"command": "make deploy"}'))
    note = await note_on_resume(tmp_path, work, "s")
    assert note == INTERRUPTED_RESULT  # nobody knows: bash records nothing


async def test_the_cut_calls_own_record_still_speaks_for_it(tmp_path: Path) -> None:
    """Where the record must still be believed: the cut call reuses the id and recorded its own
    effect, the file it meant to write holding what it meant."""
    from loopwright.tools.effects import EFFECT_EVENT

    work = tmp_path / "work"
    work.mkdir()
    await wrote_notes(tmp_path, work)
    with SQLiteStore(tmp_path / "s.db") as store:
        [record] = [e for e in store.events("s") if e.get("type") == EFFECT_EVENT]
    cut = ToolCall(id="call_0", name="write_file",
                   arguments='{"path": "notes.txt", "content": "newer\\n"}')
    cut_off(tmp_path, cut)
    import hashlib

    from loopwright.tools.idempotency import IdempotencyKeys

    with SQLiteStore(tmp_path / "s.db") as store:
        key = IdempotencyKeys("s").key_for(cut, store.load("s"))
        files = [{"path": str(work / "notes.txt"), "before": record["files"][0]["after"],
                  "after": hashlib.sha256(b"newer\n").hexdigest()}]
        store.record_events("s", "r2", [{"type": EFFECT_EVENT, "id": "call_0",
                                         "name": "write_file", "key": key, "files": files}])
    (work / "notes.txt").write_text("newer\n")
    note = await note_on_resume(tmp_path, work, "s")
    assert "It took effect" in note and "notes.txt" in note
