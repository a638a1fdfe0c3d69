"""The red-team suite's fixture: a fresh workspace and harness per case (see redteam.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from listeners import Listener
from redteam import Harness, make_workspace


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
