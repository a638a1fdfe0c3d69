"""Settings from `LOOPWRIGHT_*` variables, as a library user's deployment sets them."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from loopwright import Agent, ConfigError
from loopwright.config import UnknownVariableWarning


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


def test_a_misspelt_variable_is_named_with_the_setting_meant(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """LOOPWRIGHT_MAX_TURN=5 was silently ignored: the run went on with the default."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPWRIGHT_MAX_TURN", "5")
    with pytest.warns(UnknownVariableWarning, match=r"LOOPWRIGHT_MAX_TURN is not a setting "
                      r"and is ignored: did you mean LOOPWRIGHT_MAX_TURNS\?"):
        Agent("m")


@pytest.mark.parametrize("name", ["LOOPWRIGHT_MAX_TURNS", "LOOPWRIGHT_CONFIG_X_UNRELATED",
                                  "LOOPWRIGHT_DATA_DIR", "LOOPWRIGHT_OLLAMA_URL",
                                  "LOOPWRIGHT_MODELS_DIR", "LOOPWRIGHT_SERVE_TOKEN",
                                  "LOOPWRIGHT_LOCAL_THREADS", "LOOPWRIGHT_KILL_COUNT"])
def test_settings_and_the_variables_that_are_not_settings_warn_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(name, "5" if name.endswith(("TURNS", "THREADS", "COUNT")) else "x")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownVariableWarning)
        Agent("m")
