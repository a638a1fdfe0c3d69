"""The fake server's own tests drive it request by request with raw bodies (an Anthropic
request without `max_tokens`, a script left unasked on purpose); its strict mode, which rejects
those, has its own tests in tests/test_profiles.py."""

from __future__ import annotations

import pytest

from loopwright.testing import FakeModelServer


@pytest.fixture(autouse=True)
def _lenient_fake_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeModelServer, "strict_default", False)
