"""A session that ran against a base URL with credentials in it (`http://user:secret@host/v1`)
stores the URL without them; `--resume` without `--base-url` sent `***` as the password and
got the server's 401. It says what to give instead, and takes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", "run", *args], cwd=cwd,
                          env=cli_env(cwd, **env), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def _session_id(cwd: Path) -> str:
    listed = subprocess.run([sys.executable, "-m", "loopwright", "sessions", "list", "--json"],
                            cwd=cwd, env=cli_env(cwd), capture_output=True, text=True,
                            timeout=60)
    return str(json.loads(listed.stdout.splitlines()[0])["id"])


def test_resume_asks_for_the_url_whose_credentials_were_not_stored(tmp_path: Path) -> None:
    with FakeModelServer([Reply("first"), Reply("second")]) as server:
        with_secret = server.base_url.replace("http://", "http://user:secret@")
        first = _run(tmp_path, "Hi", "--model", "m", "--base-url", with_secret)
        assert first.returncode == 0, first.stderr
        session = _session_id(tmp_path)
        refused = _run(tmp_path, "--resume", session, "again")
        assert refused.returncode == 2, refused.stderr
        said = " ".join(refused.stderr.replace("│", " ").split())
        assert "whose credentials are not stored" in said and "--base-url" in said
        assert "secret" not in said
        assert len(server.model_requests) == 1  # nothing sent with "***" for a password
        resumed = _run(tmp_path, "--resume", session, "again", "--base-url", with_secret)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip() == "second"
        assert server.model_requests[1].headers["authorization"].startswith("Basic ")
