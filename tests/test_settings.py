"""Typed, validated settings: checked when the `Agent` is built, one line per mistake naming
where the value came from; one definition (and default) per setting."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.budget import IterationBudget
from loopwright.config import load_settings
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError
from loopwright.settings import CONCERNS, DEFAULTS, AgentOptions, Settings, TextOrPath
from loopwright.trust import UntrustedConfigWarning


def test_a_wrong_type_fails_at_construction_naming_key_value_and_type() -> None:
    with pytest.raises(ConfigError) as caught:
        Agent("m", max_turns="ten")  # type: ignore[typeddict-item]
    assert str(caught.value) == ('Agent(): max_turns = "ten" is not valid: expected int >= 1 '
                                 "(Input should be a valid integer)")


def test_a_number_given_as_text_is_refused_in_python() -> None:
    with pytest.raises(ConfigError, match=r'max_turns = "10" .* expected int >= 1'):
        Agent("m", max_turns="10")  # type: ignore[typeddict-item]


@pytest.mark.parametrize(("options", "message"), [
    ({"max_turn": 3}, "unknown setting 'max_turn' (did you mean 'max_turns'?)"),
    ({"temprature": 0.2}, "unknown setting 'temprature' (did you mean 'temperature'?)"),
    ({"zzz": 1}, "unknown setting 'zzz' (the settings are the fields of loopwright.settings"),
])
def test_a_typo_suggests_the_closest_setting(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Agent("m", **options)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("options", "expected"), [
    ({"api_mode": "chat"}, "'chat_completions' | 'responses' | 'anthropic_messages' | None"),
    ({"tool_timeout": -1.0}, "float >= 0 | None"),
    ({"tool_call_format": "xml"}, "'native' | 'prompt'"),
    ({"hidden_tools": "bash"}, "list[str]"),
])
def test_each_bad_value_names_its_expected_type(options: dict[str, object],
                                                expected: str) -> None:
    with pytest.raises(ConfigError, match="is not valid: expected ") as caught:
        Agent("m", **options)  # type: ignore[arg-type]
    assert expected in str(caught.value)


def test_paths_may_be_path_objects(tmp_path: Path) -> None:
    agent = Agent("m", workdir=tmp_path, allowed_roots=[tmp_path / "x"], data_dir=tmp_path)
    assert agent.settings.workdir == str(tmp_path)
    assert agent.settings.allowed_roots == [str(tmp_path / "x")]


def test_a_bad_config_file_value_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text('max_turns = "ten"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(cwd=tmp_path, environ={})
    assert str(caught.value).startswith(
        f'{tmp_path / "loopwright.toml"}: max_turns = "ten" is not valid: expected int >= 1')


def test_a_typo_in_the_config_file_suggests_the_setting(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text("[loopwright]\nmax_turn = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"loopwright.toml: unknown setting 'max_turn' "
                                          r"\(did you mean 'max_turns'\?\)"):
        load_settings(cwd=tmp_path, environ={})


def test_environment_values_are_converted_and_a_bad_one_names_the_variable(
        tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"LOOPWRIGHT_MAX_TURNS": "12",
                                                    "LOOPWRIGHT_TEMPERATURE": "0.5",
                                                    "LOOPWRIGHT_STREAM": "off"})
    assert (settings.max_turns, settings.temperature, settings.stream) == (12, 0.5, False)
    with pytest.raises(ConfigError, match=r'^LOOPWRIGHT_MAX_TURNS: max_turns = "ten" is not '):
        load_settings(cwd=tmp_path, environ={"LOOPWRIGHT_MAX_TURNS": "ten"})


def test_a_word_of_a_setting_that_also_takes_a_list_stays_a_word(tmp_path: Path) -> None:
    # LOOPWRIGHT_REVIEW=off was read as the list ["off"], a check that does not exist
    settings = load_settings(cwd=tmp_path, environ={
        "LOOPWRIGHT_REVIEW": "off", "LOOPWRIGHT_DEFERRED_TOOLS": "auto",
        "LOOPWRIGHT_REVIEW_OFF": "narration,unread_file"})
    assert (settings.review, settings.deferred_tools) == ("off", "auto")
    assert settings.review_off == ["narration", "unread_file"]
    named = load_settings(cwd=tmp_path, environ={"LOOPWRIGHT_REVIEW": "doom_loop,narration"})
    assert named.review == ["doom_loop", "narration"]


def test_the_cli_prints_one_line_and_exits_6_for_a_bad_config_value(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text('max_turns = "ten"\n', encoding="utf-8")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "loopwright", "run", "--model", "m",
                           "--base-url", "http://127.0.0.1:9/v1", "hi"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 6, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [f'loopwright: {tmp_path / "loopwright.toml"}: max_turns = "ten" is not '
                     "valid: expected int >= 1 (Input should be a valid integer)"]


def test_agent_options_types_exactly_the_settings() -> None:
    options = set(typing.get_type_hints(AgentOptions))
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert fields - options == set(), "add each new setting to AgentOptions in settings.py too"
    assert options - fields == set(), "AgentOptions names settings that do not exist"


def keyword_type(hint: typing.Any) -> typing.Any:
    """A setting's type as `Agent(...)` takes it: bounds dropped, a path setting as text or a
    path."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        if any(isinstance(mark, TextOrPath) for mark in hint.__metadata__):
            return str | os.PathLike[str]
        return keyword_type(args[0])
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(keyword_type(arg) for arg in args)]  # noqa: UP007
    if origin in (list, dict):
        return origin[tuple(keyword_type(arg) for arg in args)]
    return hint


def test_agent_options_repeat_the_settings_types() -> None:
    """The names are written twice (a TypedDict must be spelt out for mypy and IDEs); their
    types must not drift apart either."""
    options = typing.get_type_hints(AgentOptions)
    settings = typing.get_type_hints(Settings, include_extras=True)
    drifted = {name for name in settings if keyword_type(settings[name]) !=
               keyword_type(options[name])}
    assert drifted == set()
    assert keyword_type(settings["max_turns"]) is int  # the bound is dropped, not compared


def test_defaults_live_in_settings_only() -> None:
    agent = Agent("m")
    assert agent.settings.max_turns == DEFAULTS.max_turns == 90
    assert IterationBudget().total == DEFAULTS.iteration_budget
    assert RetryPolicy().attempts == DEFAULTS.retry_attempts
    assert agent.retry == RetryPolicy()


def write_config(project: Path, text: str) -> Path:
    path = project / "loopwright.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_config_file_may_group_settings_by_concern(tmp_path: Path) -> None:
    write_config(tmp_path, '[loop]\nmax_turns = 12\n\n[model]\ntemperature = 0.5\n'
                           'stream = false\n\n[review]\nreview = "off"\n')
    settings = load_settings(cwd=tmp_path, environ={})
    assert (settings.max_turns, settings.temperature, settings.stream) == (12, 0.5, False)
    assert settings.review == "off"
    nested = tmp_path / "nested"
    nested.mkdir()
    write_config(nested, '[loopwright]\nmodel = "m"\n\n[loopwright.memory]\nmemory_limit = 99\n')
    settings = load_settings(cwd=nested, environ={})
    assert (settings.model, settings.memory_limit) == ("m", 99)


def test_a_table_that_is_a_setting_is_not_a_group(tmp_path: Path) -> None:
    """Settings that take tables (`aliases`, `policy`, `usage_limits`) keep them; a setting
    named like a concern (`model`, `review`, `memory`) takes no table, so there one is a group."""
    write_config(tmp_path, 'model = "fast"\n[aliases]\nfast = "ollama:qwen"\n'
                           '[usage_limits]\nrequests = 3\n')
    settings = load_settings(cwd=tmp_path, environ={})
    assert settings.aliases == {"fast": "ollama:qwen"} and settings.usage_limits == {"requests": 3}
    hints = typing.get_type_hints(Settings)
    for concern in CONCERNS:
        if concern.key in hints:
            assert dict not in {typing.get_origin(arg) or arg
                                for arg in typing.get_args(hints[concern.key]) or
                                [hints[concern.key]]}, concern.key


@pytest.mark.parametrize(("text", "message"), [
    ("[sandbox]\nmax_turns = 3\n", r"\[sandbox\] holds 'max_turns', a setting of \[loop\]"),
    ("max_turns = 3\n[loop]\nmax_turns = 4\n", r"'max_turns' is set twice \(once in \[loop\]\)"),
    ("[loop]\nmax_turn = 3\n", r"\[loop\]: unknown setting 'max_turn' \(did you mean "),
])
def test_a_wrong_group_is_one_line_naming_the_file(tmp_path: Path, text: str,
                                                   message: str) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings(cwd=tmp_path, environ={})
    assert str(caught.value).startswith(str(path))


def test_a_group_does_not_get_past_the_trust_check(tmp_path: Path) -> None:
    """An untrusted project file's loosening settings are ignored grouped as they are flat."""
    write_config(tmp_path, "[safety]\napprove_all = true\n\n[loop]\nmax_turns = 7\n")
    with pytest.warns(UntrustedConfigWarning, match="ignoring approve_all"):
        settings = load_settings(cwd=tmp_path, environ={})
    assert (settings.approve_all, settings.max_turns) == (False, 7)
