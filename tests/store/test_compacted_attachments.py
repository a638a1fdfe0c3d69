"""Compaction writes the session's next epoch with each attachment as every other row holds it:
the bytes once, in the data directory, named by their SHA-256, and only that reference in the
row (never the bytes inline as base64); a resume after compaction sends the image again. Both
stores."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import pytest
from tests.test_attachments import png

from loopwright import Agent, image, tool
from loopwright.context.summary import SUMMARY_SYSTEM
from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call

PICTURE = png(64, 64)
FILLER = " ".join(["observation"] * 500)


@tool
def look(step: int) -> str:
    """Look around once more."""
    return f"{step}: {FILLER}"


def agent_for(server: FakeModelServer, tmp_path: Path, store: str) -> Agent:
    return Agent("fake-model", base_url=server.base_url, api_key="k", store=store,
                 data_dir=str(tmp_path / "data"), session_id="s1", tools=[look],
                 context_window=6_000)


def stored_rows(store: str) -> list[tuple[str, str]]:
    """Each message row's content and `data` JSON as the store holds them, every epoch."""
    if store.startswith("postgresql"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as conn:
            return list(conn.execute("SELECT content, data FROM messages").fetchall())
    db = sqlite3.connect(store)
    try:
        return list(db.execute("SELECT content, data FROM messages").fetchall())
    finally:
        db.close()


def encoded(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


async def compacted_session(tmp_path: Path, store: str) -> FakeModelServer:
    """A run given an image as bytes whose history grows until it is compacted."""
    def answer(request: RecordedRequest) -> Reply:
        sent = json.dumps(request.body)
        if "Summary: looked around" in sent:
            return Reply("A grey square.")
        if request.body["messages"][0]["content"] == SUMMARY_SYSTEM:
            return Reply("Summary: looked around many times.")
        steps = sum(message["role"] == "tool" for message in request.body["messages"])
        return Reply(tool_calls=[call("look", {"step": steps})])

    with FakeModelServer(handler=answer) as server:
        agent = agent_for(server, tmp_path, store)
        try:
            result = await agent.run(["What is this?", image(PICTURE)])
        finally:
            await agent.aclose()
    assert result.stop_reason == "completed", result.error
    return server


@pytest.mark.timeout(60)
async def test_compacted_rows_keep_the_image_by_reference_and_a_resume_sends_it(
        tmp_path: Path, store_spec: str) -> None:
    await compacted_session(tmp_path, store_spec)
    rows = stored_rows(store_spec)
    assert any("Summary: looked around" in content for content, _ in rows)  # compacted
    attached = [json.loads(data)["attachments"] for _, data in rows if "attachments" in data]
    assert len(attached) >= 2  # the task's row in the first epoch and in the compacted one
    for attachments in attached:
        assert "base64" not in attachments[0] and "path" in attachments[0]
    assert not any(encoded(PICTURE)[:40] in data for _, data in rows)
    (stored,) = (tmp_path / "data" / "attachments").iterdir()
    assert stored.read_bytes() == PICTURE
    with FakeModelServer([Reply("Still a grey square.")]) as server:
        agent = agent_for(server, tmp_path, store_spec)
        try:
            result = await agent.run("And now?")
        finally:
            await agent.aclose()
    assert result.output == "Still a grey square."
    assert encoded(PICTURE) in json.dumps(server.model_requests[-1].body)
