"""Fixtures for the batch tests: a fake model server whose replies follow each task's prompt
(`batch_support.TaskScript`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from batch_support import TaskScript

from loopwright.testing import FakeModelServer


@pytest.fixture
def script() -> TaskScript:
    return TaskScript()


@pytest.fixture
def model_server(script: TaskScript) -> Iterator[FakeModelServer]:
    with FakeModelServer(handler=script, context_window=32_000) as server:
        try:
            yield server
        finally:
            script.release.set()  # no handler stays blocked while the server stops
