"""Settings from `LOOPWRIGHT_*` variables, as a library user's deployment sets them."""

from __future__ import annotations

import pytest

from loopwright import Agent, ConfigError


def test_a_table_setting_with_named_keys_is_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """`LOOPWRIGHT_USAGE_LIMITS='{"total_tokens": 5000}'` was refused: `usage_limits = "{…}" is
    not valid: expected UsageLimits | None (Input should be a valid dictionary)`."""
    monkeypatch.setenv("LOOPWRIGHT_USAGE_LIMITS", '{"total_tokens": 5000, "cost": 0.5}')
    assert Agent("m").settings.usage_limits == {"total_tokens": 5000, "cost": 0.5}


def test_broken_json_in_a_table_setting_is_named_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_USAGE_LIMITS", '{"total_tokens": }')
    with pytest.raises(ConfigError, match=r"LOOPWRIGHT_USAGE_LIMITS=.* is not valid JSON"):
        Agent("m")


def test_a_table_settings_keys_are_still_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_USAGE_LIMITS", '{"tokens": 5000}')
    with pytest.raises(ConfigError, match="LOOPWRIGHT_USAGE_LIMITS: usage_limits"):
        Agent("m")
