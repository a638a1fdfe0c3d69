"""A stored attachment path read back on resume: the user's own file, unchanged, and the store's
own copy are sent again; a file edited, deleted or replaced since (by a link to a key, a pipe, a
device), a row pointed at another file, or a row written before digests were recorded that names
the user's file gets nothing read from it and nothing sent: the session goes on, the model told
that the attachment is no longer available and the user warned once, naming the file and why.
Both stores, the library and the CLI."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.test_attachments import png

from loopwright import Agent, image
from loopwright.errors import SessionError
from loopwright.messages import ModelRequest
from loopwright.plugins import LoopPlugin, RunView
from loopwright.store.read_back import AttachmentGoneWarning, gone_note
from loopwright.store.rows import message_at
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env

PICTURE = png(4, 4)
EDITED = png(6, 6)
SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n"
GONE = gone_note("chart.png")


def agent_for(server: FakeModelServer, tmp_path: Path, store: str | None = None) -> Agent:
    return Agent("fake-model", base_url=server.base_url, api_key="k",
                 store=store or str(tmp_path / "data" / "sessions.db"),
                 data_dir=str(tmp_path / "data"), session_id="s1")


async def first_run(tmp_path: Path, attachment_source: Path | bytes,
                    store: str | None = None) -> None:
    with FakeModelServer([Reply("a small square")]) as server:
        agent = agent_for(server, tmp_path, store)
        await agent.run(["what is this?", image(attachment_source)])
        await agent.aclose()


def users_chart(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    chart = tmp_path / "work" / "chart.png"
    chart.write_bytes(PICTURE)
    return chart


def rewrite_attachments(tmp_path: Path, store: str | None,
                        edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit each stored attachment's JSON as a damaged, hostile or older row holds it."""
    if store is not None and store.startswith("postgresql"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as conn:
            rows = conn.execute("SELECT id, data FROM messages").fetchall()
            for key, data in rows:
                conn.execute("UPDATE messages SET data = %s WHERE id = %s",
                             (_edited(data, edit), key))
        return
    db = sqlite3.connect(store or tmp_path / "data" / "sessions.db")
    with db:
        for key, data in db.execute("SELECT rowid, data FROM messages").fetchall():
            db.execute("UPDATE messages SET data = ? WHERE rowid = ?", (_edited(data, edit), key))
    db.close()


def _edited(data: str, edit: Callable[[dict[str, Any]], None]) -> str:
    fields = json.loads(data)
    for attachment in fields.get("attachments", []):
        edit(attachment)
    return json.dumps(fields)


def repoint(tmp_path: Path, path: str, *, keep_digest: bool) -> None:
    def pointed(attachment: dict[str, Any]) -> None:
        attachment["path"] = path
        if not keep_digest:
            attachment.pop("sha256", None)
    rewrite_attachments(tmp_path, None, pointed)


async def resume(tmp_path: Path, store: str | None = None
                 ) -> tuple[FakeModelServer, list[str]]:
    """The session resumed: what the model was sent, and what the user was warned of."""
    with FakeModelServer([Reply("still a square")]) as server, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # once however warnings are filtered
        agent = agent_for(server, tmp_path, store)
        try:
            result = await agent.run("and now?")
        finally:
            await agent.aclose()
    assert result.stop_reason == "completed", result.error
    return server, [str(w.message) for w in caught if w.category is AttachmentGoneWarning]


def sent(server: FakeModelServer) -> str:
    return " ".join(json.dumps(request.body) for request in server.model_requests)


def encoded(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def assert_goes_on_without_it(server: FakeModelServer, warned: list[str], path: Path | str,
                              why: str, *never_sent: bytes) -> None:
    """One request, told the attachment is gone, none of its old or new bytes in it; the user
    warned once, naming the file and why."""
    assert len(server.model_requests) == 1
    body = sent(server)
    assert GONE in body
    assert "image_url" not in body
    for raw in filter(None, (PICTURE, *never_sent)):
        assert encoded(raw) not in body
    assert len(warned) == 1, warned
    assert f"attachment chart.png ({path}) is no longer available" in warned[0]
    assert why in warned[0], warned[0]


async def test_the_users_own_file_is_sent_again_on_resume(tmp_path: Path) -> None:
    await first_run(tmp_path, users_chart(tmp_path))
    row = sqlite3.connect(tmp_path / "data" / "sessions.db").execute(
        "SELECT data FROM messages WHERE role = 'user'").fetchone()[0]
    assert json.loads(row)["attachments"][0]["sha256"] == hashlib.sha256(PICTURE).hexdigest()
    server, warned = await resume(tmp_path)
    assert encoded(PICTURE) in sent(server)
    assert GONE not in sent(server) and warned == []


async def test_the_stores_own_copy_is_sent_again_with_or_without_its_digest(
        tmp_path: Path) -> None:
    await first_run(tmp_path, PICTURE)
    server, warned = await resume(tmp_path)
    assert encoded(PICTURE) in sent(server) and warned == []
    (stored,) = (tmp_path / "data" / "attachments").iterdir()
    repoint(tmp_path, str(stored), keep_digest=False)  # a row written before digests
    server, warned = await resume(tmp_path)
    assert encoded(PICTURE) in sent(server) and warned == []


def replaced_by_link_to_a_key(chart: Path) -> bytes:
    secret = chart.parent.parent / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(SECRET)
    chart.unlink()  # the reason, "it is a link", says the key was never opened through it
    chart.symlink_to(secret)
    return SECRET


def replaced_by_a_pipe(chart: Path) -> bytes:
    chart.unlink()
    os.mkfifo(chart)  # no writer: reading it would block for ever
    return b""


def edited(chart: Path) -> bytes:
    chart.write_bytes(EDITED)
    return EDITED


def deleted(chart: Path) -> bytes:
    chart.unlink()
    return b""


DAMAGES: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "edited": (edited, "its bytes are not the ones attached"),
    "deleted": (deleted, "No such file or directory"),
    "replaced by a link to a key": (replaced_by_link_to_a_key, "it is a link"),
    "replaced by a pipe": (replaced_by_a_pipe, "not a regular file"),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("damage", list(DAMAGES))
async def test_a_users_file_changed_since_is_not_sent_and_the_session_goes_on(
        tmp_path: Path, store_spec: str, damage: str) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart, store_spec)
    change, why = DAMAGES[damage]
    new_bytes = change(chart)
    server, warned = await resume(tmp_path, store_spec)
    assert_goes_on_without_it(server, warned, chart, why, new_bytes)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("keep_digest", [True, False])
@pytest.mark.parametrize("target", ["a key", "/dev/zero", "a pipe"])
async def test_a_row_pointed_at_another_file_reads_and_sends_none_of_it(
        tmp_path: Path, target: str, keep_digest: bool) -> None:
    await first_run(tmp_path, users_chart(tmp_path))
    path, never_sent = target, b""
    if target == "a key":
        key = tmp_path / "home" / ".ssh" / "id_rsa"
        key.parent.mkdir(parents=True)
        key.write_bytes(SECRET)
        path, never_sent = str(key), SECRET
    elif target == "a pipe":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)
    repoint(tmp_path, path, keep_digest=keep_digest)
    why = ("not a regular file" if keep_digest and target != "a key" else
           "its bytes are not the ones attached" if keep_digest else
           "written before attachments' digests were recorded")
    server, warned = await resume(tmp_path)
    assert_goes_on_without_it(server, warned, path, why, never_sent)


def as_the_older_code_wrote_it(attachment: dict[str, Any]) -> None:
    """An attachment by path as rows held it before digests were recorded (4fa42a5's
    `to_dict`: kind, media type, the resolved path and the file's name, nothing else)."""
    del attachment["sha256"]
    assert attachment.keys() <= {"kind", "media_type", "path", "name"}


@pytest.mark.timeout(30)
async def test_an_older_row_naming_the_users_file_is_not_read_even_unchanged(
        tmp_path: Path, store_spec: str) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart, store_spec)
    rewrite_attachments(tmp_path, store_spec, as_the_older_code_wrote_it)
    chart.unlink()
    os.mkfifo(chart)  # opened, even to look at it, it would be read: nothing may open it
    server, warned = await resume(tmp_path, store_spec)
    assert_goes_on_without_it(server, warned, chart,
                              "written before attachments' digests were recorded")


async def test_an_older_row_naming_the_stores_own_copy_is_sent(tmp_path: Path,
                                                              store_spec: str) -> None:
    await first_run(tmp_path, PICTURE, store_spec)
    rewrite_attachments(tmp_path, store_spec, as_the_older_code_wrote_it)
    server, warned = await resume(tmp_path, store_spec)
    assert encoded(PICTURE) in sent(server) and warned == []


async def test_only_the_attachment_that_changed_is_left_out(tmp_path: Path) -> None:
    chart = users_chart(tmp_path)
    kept = tmp_path / "work" / "kept.png"
    kept.write_bytes(EDITED)
    with FakeModelServer([Reply("two squares")]) as server:
        agent = agent_for(server, tmp_path)
        await agent.run(["compare", image(chart), image(kept)])
        await agent.aclose()
    chart.write_bytes(SECRET)
    server, warned = await resume(tmp_path)
    body = sent(server)
    assert GONE in body and encoded(EDITED) in body and encoded(SECRET) not in body
    assert len(warned) == 1 and "kept.png" not in warned[0]


def loopwright(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", *args], cwd=tmp_path, capture_output=True,
        text=True, timeout=60,
        env=cli_env(tmp_path, LOOPWRIGHT_DATA_DIR=str(tmp_path / "data")))


@pytest.mark.timeout(120)
async def test_the_cli_resumes_without_the_file_and_shows_the_session(tmp_path: Path) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart)
    replaced_by_a_pipe(chart)
    shown = loopwright(tmp_path, "sessions", "show", "s1")
    assert shown.returncode == 0, shown.stderr
    assert "what is this?" in shown.stdout
    with FakeModelServer([Reply("still a square")]) as server:
        proc = loopwright(tmp_path, "run", "and now?", "--resume", "s1", "--model",
                          "fake-model", "--base-url", server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "still a square" in proc.stdout
    notes = [line for line in proc.stderr.splitlines() if "no longer available" in line]
    assert notes == [f"loopwright: session s1: attachment chart.png ({chart}) is no longer "
                     "available, so the model is told so instead: not a regular file"]
    assert GONE in sent(server)


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


async def test_a_file_changed_during_the_resumed_run_is_sent_as_it_was_attached(
        tmp_path: Path) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart)

    class Redraw(LoopPlugin):
        """Rewrites the chart after the resume checked it, before the request is made."""

        async def before_model(self, run: RunView, request: ModelRequest) -> None:
            chart.write_bytes(SECRET)

    with FakeModelServer([Reply("still a square")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", plugins=[Redraw()],
                      store=str(tmp_path / "data" / "sessions.db"),
                      data_dir=str(tmp_path / "data"), session_id="s1")
        result = await agent.run("and now?")
        await agent.aclose()
    assert result.stop_reason == "completed", result.error
    assert encoded(PICTURE) in sent(server) and encoded(SECRET) not in sent(server)


async def test_a_file_attached_twice_is_one_warning_and_two_notes(tmp_path: Path) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart)
    with FakeModelServer([Reply("the same square")]) as server:
        agent = agent_for(server, tmp_path)
        await agent.run(["and this one?", image(chart)])
        await agent.aclose()
    chart.unlink()
    server, warned = await resume(tmp_path)
    assert sent(server).count(GONE) == 2 and encoded(PICTURE) not in sent(server)
    assert len(warned) == 1 and str(chart) in warned[0]
