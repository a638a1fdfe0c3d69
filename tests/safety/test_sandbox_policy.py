"""The sandbox policy from settings, the bubblewrap command line and the macOS profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.config import load_settings
from loopwright.errors import ConfigError
from loopwright.safety.sandbox import SandboxPolicy, policy_from_settings, sandbox_note
from loopwright.safety.sandbox.linux import bwrap_argv
from loopwright.safety.sandbox.macos import seatbelt_profile
from loopwright.safety.sandbox.policy import SandboxLimits


def test_defaults_are_workspace_write_without_network() -> None:
    policy = policy_from_settings(load_settings())
    assert policy.mode == "workspace-write" and policy.network is False and policy.enabled


def test_settings_come_from_the_environment_too() -> None:
    settings = load_settings(environ={"LOOPWRIGHT_SANDBOX_MODE": "READ-ONLY",
                                      "LOOPWRIGHT_SANDBOX_NETWORK": "true",
                                      "LOOPWRIGHT_ENV_PASSTHROUGH": "GITHUB_TOKEN,NPM_*"})
    policy = policy_from_settings(settings)
    assert policy.mode == "read-only" and policy.network
    assert policy.env_passthrough == ("GITHUB_TOKEN", "NPM_*")


@pytest.mark.parametrize(("key", "value", "message"), [
    ("sandbox_mode", "off", "not a sandbox mode; use one of read-only, workspace-write"),
    ("sandbox_network", "yes", 'sandbox_network = "yes" is not valid: expected bool'),
    ("env_passthrough", "GITHUB_TOKEN", 'env_passthrough = "GITHUB_TOKEN" is not valid: expected '
     r"list\[str\]"),
])
def test_bad_values_are_one_clear_error(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        policy_from_settings(load_settings({key: value}))


def test_bwrap_line_order_read_only_root_then_tmp_then_workspace(tmp_path: Path) -> None:
    argv = bwrap_argv(SandboxPolicy(), "/usr/bin/bwrap", ["/bin/bash", "-c", "true"],
                      cwd=tmp_path, roots=[tmp_path], home=tmp_path / "nohome")
    argv = argv[argv.index("/usr/bin/bwrap"):]  # a pids cgroup's shell may come first
    text = " ".join(argv)
    assert text.startswith("/usr/bin/bwrap --ro-bind / / --dev /dev --proc /proc "
                           "--size 1073741824 --tmpfs /tmp")  # the private /tmp is capped
    assert text.index("--tmpfs /tmp") < text.index(f"--bind-try {tmp_path} {tmp_path}")
    for flag in ("--unshare-pid", "--unshare-net", "--die-with-parent"):
        assert flag in argv
    assert "--new-session" not in argv  # the sandbox's init must stay in the killed group
    assert argv[-4:] == ["--", "/bin/bash", "-c", "true"]


def test_network_and_read_only_change_the_line(tmp_path: Path) -> None:
    argv = bwrap_argv(SandboxPolicy(mode="read-only", network=True), "bwrap", ["true"],
                      cwd=tmp_path, roots=[tmp_path], home=tmp_path)
    assert "--unshare-net" not in argv and "--bind-try" not in argv
    assert f"--ro-bind-try {tmp_path} {tmp_path}" in " ".join(argv)


def test_macos_profile_denies_by_default_and_allows_the_workspace(tmp_path: Path) -> None:
    profile = seatbelt_profile(SandboxPolicy(), roots=[tmp_path], home=Path("/Users/me"),
                               tmpdir=Path("/private/tmp"))
    assert profile.startswith("(version 1)\n(deny default)\n")
    assert f'(allow file-write* (subpath "{tmp_path}")' in profile
    assert '(deny file-read* (subpath "/Users/me/.ssh")' in profile
    assert f'(deny file-write* (subpath "{tmp_path}/.git")' in profile
    assert f'(subpath "{tmp_path}/loopwright.toml")' in profile  # missing, still uncreatable
    assert "network" not in profile
    assert "(allow network*)" in seatbelt_profile(
        SandboxPolicy(network=True, mode="read-only"), roots=[tmp_path], home=tmp_path,
        tmpdir=tmp_path)


def test_the_model_note_depends_on_configuration_only() -> None:
    on = sandbox_note(SandboxPolicy(), available=True)
    assert on == sandbox_note(SandboxPolicy(), available=True)
    assert "mode workspace-write" in on and "Network: off" in on
    assert "Network: on" in sandbox_note(SandboxPolicy(network=True), available=True)
    assert "full-access" in sandbox_note(SandboxPolicy(mode="full-access"), available=True)
    assert "unavailable" in sandbox_note(SandboxPolicy(), available=False)


def test_a_supervisor_interpreter_installed_under_tmp_keeps_its_standard_library(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the private /tmp would hide a Python built under /tmp, and the supervisor would not start
    prefix = Path("/tmp/python-prefix")
    monkeypatch.setattr("sys.base_prefix", str(prefix))
    argv = bwrap_argv(SandboxPolicy(), "bwrap", ["true"], cwd=tmp_path, roots=[tmp_path],
                      home=tmp_path)
    assert f"--ro-bind {prefix} {prefix}" in " ".join(argv)
    unlimited = SandboxPolicy(limits=SandboxLimits(processes=0, file_mb=0, memory_mb=0,
                                                    tmp_mb=0, min_free_mb=0))
    argv = bwrap_argv(unlimited, "bwrap", ["true"], cwd=tmp_path, roots=[tmp_path], home=tmp_path)
    assert str(prefix) not in " ".join(argv)  # no supervisor, nothing to bind


def test_macos_profile_hides_the_data_and_config_directories(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "/Users/me/data")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/Users/me/cfg")
    profile = seatbelt_profile(SandboxPolicy(), roots=[tmp_path], home=Path("/Users/me"),
                               tmpdir=Path("/private/tmp"))
    denied = next(line for line in profile.splitlines() if line.startswith("(deny file-read*"))
    assert '(subpath "/Users/me/data/loopwright")' in denied
    assert '(subpath "/Users/me/cfg/loopwright")' in denied
