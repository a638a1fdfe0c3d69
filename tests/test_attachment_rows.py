"""A stored attachment path read back on resume: the user's own file is sent again; a row
pointed at another file (a key outside the workspace, /dev/zero, a pipe) gets nothing read
from it, and the resume says which attachment and what to do before any request."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from tests.test_attachments import png

from loopwright import Agent, image
from loopwright.errors import ConfigError, SessionError
from loopwright.store.rows import message_at
from loopwright.testing import FakeModelServer, Reply

PICTURE = png(4, 4)
SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n"


def agent_for(server: FakeModelServer, tmp_path: Path) -> Agent:
    return Agent("fake-model", base_url=server.base_url, api_key="k",
                 store=str(tmp_path / "sessions.db"), data_dir=str(tmp_path / "data"),
                 session_id="s1")


async def first_run(tmp_path: Path, attachment_source: Path | bytes) -> None:
    with FakeModelServer([Reply("a small square")]) as server:
        agent = agent_for(server, tmp_path)
        await agent.run(["what is this?", image(attachment_source)])
        await agent.aclose()


def repoint(tmp_path: Path, path: str, *, keep_digest: bool) -> None:
    """Rewrite the stored attachment as a damaged or hostile row would."""
    db = sqlite3.connect(tmp_path / "sessions.db")
    with db:
        for rowid, data in db.execute("SELECT rowid, data FROM messages").fetchall():
            fields = json.loads(data)
            for attachment in fields.get("attachments", []):
                attachment["path"] = path
                if not keep_digest:
                    attachment.pop("sha256", None)
            db.execute("UPDATE messages SET data = ? WHERE rowid = ?",
                       (json.dumps(fields), rowid))
    db.close()


async def resume(tmp_path: Path) -> FakeModelServer:
    with FakeModelServer([Reply("still a square")]) as server:
        agent = agent_for(server, tmp_path)
        try:
            await agent.run("and now?")
        finally:
            await agent.aclose()
    return server


async def refused(tmp_path: Path, match: str) -> None:
    """The resume fails naming the attachment, before any request."""
    with FakeModelServer([]) as server:
        agent = agent_for(server, tmp_path)
        with pytest.raises(ConfigError, match=match):
            await agent.run("and now?")
        await agent.aclose()
    assert server.model_requests == []


def sent(server: FakeModelServer) -> str:
    return " ".join(str(request.body) for request in server.model_requests)


async def test_the_users_own_file_is_sent_again_on_resume(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    chart = tmp_path / "work" / "chart.png"
    chart.write_bytes(PICTURE)
    await first_run(tmp_path, chart)
    row = sqlite3.connect(tmp_path / "sessions.db").execute(
        "SELECT data FROM messages WHERE role = 'user'").fetchone()[0]
    assert json.loads(row)["attachments"][0]["sha256"] == hashlib.sha256(PICTURE).hexdigest()
    server = await resume(tmp_path)
    assert base64.b64encode(PICTURE).decode() in sent(server)


async def test_the_stores_own_copy_is_sent_again_with_or_without_its_digest(
        tmp_path: Path) -> None:
    await first_run(tmp_path, PICTURE)
    assert base64.b64encode(PICTURE).decode() in sent(await resume(tmp_path))
    (stored,) = (tmp_path / "data" / "attachments").iterdir()
    repoint(tmp_path, str(stored), keep_digest=False)  # a row written before digests
    assert base64.b64encode(PICTURE).decode() in sent(await resume(tmp_path))


@pytest.mark.parametrize("keep_digest", [True, False])
async def test_a_row_pointed_at_a_secret_sends_none_of_it(tmp_path: Path,
                                                          keep_digest: bool) -> None:
    await first_run(tmp_path, PICTURE)
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(SECRET)
    repoint(tmp_path, str(secret), keep_digest=keep_digest)
    await refused(tmp_path, f"attachment {secret} of the stored session is not sent again")


async def test_a_users_file_changed_since_it_was_attached_is_not_sent(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.write_bytes(PICTURE)
    await first_run(tmp_path, chart)
    chart.write_bytes(SECRET)  # the same path, other bytes: not what the session holds
    await refused(tmp_path, "its bytes are not the ones attached")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("device", ["/dev/zero", "fifo"])
async def test_a_row_pointed_at_a_device_or_a_pipe_is_not_read(tmp_path: Path,
                                                               device: str) -> None:
    await first_run(tmp_path, PICTURE)
    if device == "fifo":
        device = str(tmp_path / "pipe")
        os.mkfifo(device)  # no writer: reading it would block for ever
    repoint(tmp_path, device, keep_digest=True)
    await refused(tmp_path, "not a regular file")


def test_a_row_with_a_digest_of_another_shape_is_damaged(tmp_path: Path) -> None:
    data = {"attachments": [{"kind": "image", "media_type": "image/png", "path": "/x.png",
                             "sha256": "A" * 64}]}
    with pytest.raises(SessionError, match="message 0 is damaged"):
        message_at("s1", 0, "user", "look", json.dumps(data))
    data["attachments"][0]["sha256"] = "a" * 64
    assert message_at("s1", 0, "user", "look", json.dumps(data)).attachments[0].sha256


def test_an_attachment_built_around_a_link_to_an_image_is_read(tmp_path: Path) -> None:
    """A user's `Attachment(path=...)` naming a link to their picture is read as the picture
    (only what a stored row points at is held to the digest recorded when it was attached)."""
    from loopwright.attachments import Attachment

    picture = tmp_path / "cat.png"
    picture.write_bytes(PICTURE)
    latest = tmp_path / "latest.png"
    latest.symlink_to(picture)
    assert Attachment(kind="image", media_type="image/png", path=str(latest)).read() == PICTURE
