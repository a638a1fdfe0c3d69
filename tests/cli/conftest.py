"""Fixtures of the command-line tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tmux_pane import Pane, open_pane


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    """A real terminal (tmux) for one test: start a command in it, type, read the screen."""
    with open_pane(tmp_path) as shown:
        yield shown
