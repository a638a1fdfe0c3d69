"""The red-team suite's fixture: a fresh workspace and harness per case (see redteam.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redteam import Harness, make_workspace


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return make_workspace(tmp_path)
