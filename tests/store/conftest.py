"""`store_spec`: runs a test once against SQLite and once against a real PostgreSQL server
(the same session suite for both; the server is tests/conftest.py's `postgres_server`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pg_server import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What to pass as `Agent(store=...)`: a fresh SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    server = request.getfixturevalue("postgres_server")
    return fresh_database(server)
