"""Keep every test away from the real home: data, cache and config go to a temp dir.

Helpers that tests import live in `shared_helpers.py` (`from shared_helpers import …`): a test
module cannot reliably `import conftest`, since pytest replaces that module with each
directory's own conftest.py (tests/mcp, tests/wire) as it collects them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared_helpers import LOCAL_SERVER_URLS, require_component


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                  ) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in ("LOOPWRIGHT_DATA_DIR", "LOOPWRIGHT_BASE_URL", "LOOPWRIGHT_API_KEY",
                 "LOOPWRIGHT_MODEL", "LOOPWRIGHT_CONFIG", "OPENAI_API_KEY",
                 "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, url in LOCAL_SERVER_URLS.items():  # detection never finds the machine's servers
        monkeypatch.setenv(name, url)
    return home


@pytest.fixture(autouse=True)
def unknown_servers() -> None:
    """What the process learnt about servers is per base URL: a fake server of an earlier test
    may have had this test's port."""
    from loopwright.endpoints.servers import forget_all

    forget_all()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL server for this test session (see tests/pg_server.py); its DSN."""
    from pg_server import PG_MISSING, running_postgres

    with running_postgres() as dsn:
        require_component(dsn is not None, PG_MISSING)
        assert dsn is not None
        yield dsn


__all__ = ["isolated_home", "postgres_server", "require_component"]
