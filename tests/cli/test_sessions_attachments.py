"""`loopwright sessions show` names each attachment of a message with its size and whether it
still holds what was attached (same, changed, gone), read as a resumed session reads it: nothing
through a link, from a pipe or a device. Through the real CLI, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.store.conftest import store_spec  # the same two stores as tests/store's
from tests.test_attachments import png

from loopwright import Agent, image
from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env

PICTURE = png(4, 4)
EDITED = png(9, 9)
SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key, longer than the picture\n" * 9
NAMES = ("kept", "edited", "deleted", "piped", "linked")
__all__ = ["store_spec"]


async def session_with_attachments(tmp_path: Path, store: str) -> dict[str, Path]:
    """Session s1: one user message with five of the user's pictures and one given as bytes."""
    work = tmp_path / "work"
    work.mkdir()
    files = {name: work / f"{name}.png" for name in NAMES}
    for path in files.values():
        path.write_bytes(PICTURE)
    with FakeModelServer([Reply("six squares")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", store=store,
                      data_dir=str(tmp_path / "data"), session_id="s1")
        await agent.run(["compare these", *map(image, files.values()),
                         image(PICTURE, name="pasted.png")])
        await agent.aclose()
    return files


def damage(files: dict[str, Path], tmp_path: Path) -> None:
    files["edited"].write_bytes(EDITED)
    files["deleted"].unlink()
    files["piped"].unlink()
    os.mkfifo(files["piped"])  # no writer: a read of it would wait for ever
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(SECRET)
    files["linked"].unlink()
    files["linked"].symlink_to(secret)


def shown(tmp_path: Path, store: str) -> dict[str, str]:
    """`sessions show s1`'s line for each attachment, by file name."""
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright", "sessions", "show", "s1", "--db", store],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env=cli_env(tmp_path, LOOPWRIGHT_DATA_DIR=str(tmp_path / "data")))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "compare these" in proc.stdout
    lines = [line.strip() for line in proc.stdout.splitlines()
             if line.strip().startswith("attachment ")]
    return {line.split()[1]: line for line in lines}


@pytest.mark.timeout(120)
async def test_show_says_which_attachments_are_still_what_was_attached(
        tmp_path: Path, store_spec: str) -> None:
    files = await session_with_attachments(tmp_path, store_spec)
    before = shown(tmp_path, store_spec)
    assert sorted(before) == sorted([f"{name}.png" for name in NAMES] + ["pasted.png"])
    for line in before.values():  # nothing changed yet: every one the same, with its size
        assert f"image/png  {len(PICTURE):,} bytes  same  (" in line, line
    damage(files, tmp_path)
    after = shown(tmp_path, store_spec)
    assert after["kept.png"].endswith(f"same  ({files['kept']})")
    assert f"{len(PICTURE):,} bytes  same  (" in after["pasted.png"]  # the store's own copy
    assert (f"{len(EDITED):,} bytes  changed: its bytes are not the ones attached  "
            f"({files['edited']})") in after["edited.png"]
    assert "image/png  gone: cannot read it: No such file or directory" in after["deleted.png"]
    assert "image/png  gone: not a regular file" in after["piped.png"]
    assert "image/png  gone: cannot read it: it is a link" in after["linked.png"]
    assert f"{len(SECRET):,}" not in after["linked.png"]  # never opened through the link


@pytest.mark.timeout(120)
async def test_show_does_not_even_open_a_pipe_put_in_the_files_place(tmp_path: Path) -> None:
    """Opening a pipe is itself an act (a writer waiting on it goes on); so is opening many a
    device. Only what is a regular file before it is opened gets opened."""
    store = str(tmp_path / "data" / "sessions.db")
    files = await session_with_attachments(tmp_path, store)
    files["piped"].unlink()
    os.mkfifo(files["piped"])
    writer = threading.Thread(target=lambda: os.close(os.open(files["piped"], os.O_WRONLY)))
    writer.start()  # blocks until something opens the pipe to read
    try:
        assert "gone: not a regular file" in shown(tmp_path, store)["piped.png"]
        writer.join(timeout=0.5)
        assert writer.is_alive(), "sessions show opened the pipe"
    finally:
        os.close(os.open(files["piped"], os.O_RDONLY | os.O_NONBLOCK))  # lets the writer end
        writer.join()
