"""The `make_server` fixture: a running `loopwright serve` app per test (see serve_helpers)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import TOKEN, MakeServer, Served, agent_options, serve_in_thread

from loopwright.serve.app import ServeOptions
from loopwright.store import open_store
from loopwright.testing import FakeModelServer


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[MakeServer]:
    """`make_server(fake, approval_timeout=…, leave_grace=…, store=…)` → a running server."""
    stack = contextlib.ExitStack()

    def make(fake: FakeModelServer, *, store: Any = "default", workdir: Path | None = None,
             agent: dict[str, Any] | None = None, **options: Any) -> Served:
        chosen = open_store(tmp_path / "sessions.db") if store == "default" else store
        serve_options = ServeOptions(
            token=TOKEN, store=chosen,
            agent_options=agent_options(fake, workdir or tmp_path / "work", **(agent or {})),
            **{"leave_grace": 0.5, **options})
        return stack.enter_context(serve_in_thread(serve_options))

    with stack:
        yield make
