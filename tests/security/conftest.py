"""The red-team suite's fixtures: a fresh workspace and harness per case (see redteam.py), where
planted code leaves its mark, and the real programs a file needs (opt in with
`pytestmark = pytest.mark.usefixtures("needs_bwrap")`, so a test that does not start the sandbox
never skips for want of it)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from listeners import Listener
from redteam import Harness, make_workspace

from shared_helpers import require_component


@pytest.fixture
def needs_bwrap() -> None:
    """Skip (fail on CI) where bubblewrap is missing: the test starts the real sandbox."""
    require_component(shutil.which("bwrap") is not None,
                      "bubblewrap is needed to build the sandbox: apt-get install bubblewrap")


@pytest.fixture
def needs_git() -> None:
    require_component(shutil.which("git") is not None, "git is needed: apt-get install git")


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return make_workspace(tmp_path)


@pytest.fixture
def local() -> Iterator[Listener]:
    listener = Listener("127.0.0.1")
    yield listener
    listener.close()


@pytest.fixture
def other() -> Iterator[Listener]:
    """A second machine-local service, on 127.0.0.2 (the whole 127/8 is loopback on Linux)."""
    listener = Listener("127.0.0.2")
    yield listener
    listener.close()


@pytest.fixture
def canary() -> Iterator[Path]:
    """Where planted code leaves its mark: outside the workspace and outside /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="loopwright-canary-", dir="/var/tmp"))
    try:
        yield folder / "ran"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
