"""Keep every test away from the real home: data, cache and config go to a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest


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
    return home


def require_component(available: bool, why: str) -> None:
    """Skip a test whose real component (bwrap, PostgreSQL, Chromium, model weights…) is absent.

    Locally the skip names what is missing and how to get it; on CI (``CI=true``) the component is
    installed by ``.ci/run``, so its absence is a failure, never a silent skip.
    """
    if available:
        return
    import os

    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"required on CI but missing: {why}")
    pytest.skip(why)
