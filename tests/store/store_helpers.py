"""Helpers of the session-store tests."""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.interrupted import INTERRUPTED
from loopwright.testing import FakeModelServer, Reply


async def note_on_resume(tmp_path: Path, work: Path, session_id: str) -> str:
    """The note a resumed run gives the one call a crash cut off in session `session_id` of
    `tmp_path/s.db` (its file tools working in `work`), as the model receives it: the last tool
    result of the request (earlier ones are of calls that returned)."""
    with FakeModelServer([Reply("Checked.")]) as server:
        agent = Agent("test-model", base_url=server.base_url, api_key="k",
                      store=tmp_path / "s.db", session_id=session_id, workdir=str(work),
                      tools=default_tools(names=["write_file"]))
        result = await agent.run("")
        body = server.model_requests[0].body or {}
    assert result.output == "Checked."
    notes = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert notes and notes[-1].startswith(INTERRUPTED)
    assert not any(note.startswith(INTERRUPTED) for note in notes[:-1])
    return str(notes[-1])
